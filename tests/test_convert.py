"""The hand-over between torch and JAX (torchax_vae/engine/convert.py): DLPack where memory is shared, and
aliasing only where it is safe. On CPU, torch and JAX share host memory, so the same code path a
CUDA tensor takes to JAX's GPU runs here; which devices count as shared is checked with stand-ins."""

from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch

from torchax_vae.engine import convert


def gpu(index):
    return SimpleNamespace(platform="gpu", id=index, local_hardware_id=index)


@pytest.mark.parametrize(
    "t_device, device, shared",
    [
        (torch.device("cpu"), jax.devices("cpu")[0], True),
        (torch.device("cuda", 1), gpu(1), True),
        (torch.device("cuda"), gpu(0), True),
        (torch.device("cuda", 0), gpu(1), False),  # another GPU: through the host
        (torch.device("cuda", 0), jax.devices("cpu")[0], False),
        (torch.device("cpu"), gpu(0), False),
        (torch.device("cuda", 0), SimpleNamespace(platform="tpu", id=0, local_hardware_id=0), False),
        (torch.device("meta"), jax.devices("cpu")[0], False),
    ],
)
def test_which_devices_share_memory(t_device, device, shared):
    assert convert.shares_memory(t_device, device) is shared


def test_an_input_is_handed_over_without_a_copy():
    t = torch.arange(2 * 3 * 4 * 8, dtype=torch.float32).reshape(2, 3, 4, 8)
    a = convert.to_jax(t, alias=True)
    assert a.unsafe_buffer_pointer() == t.data_ptr(), "an input was copied where memory is shared"
    np.testing.assert_array_equal(np.asarray(a), t.numpy())


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_a_weight_is_copied_so_later_edits_of_the_users_tensor_do_not_reach_it(dtype):
    t = torch.ones(64, 64, dtype=dtype)
    a = convert.to_jax(t)
    assert a.unsafe_buffer_pointer() != t.data_ptr()
    t.mul_(3)
    assert float(jnp.max(a.astype(jnp.float32))) == 1.0, "a weight aliases the user's tensor"


def test_a_non_contiguous_input_arrives_whole_and_in_order():
    t = torch.randn(2, 4, 5, 6).transpose(1, 3)
    np.testing.assert_array_equal(np.asarray(convert.to_jax(t, alias=True)), t.numpy())


@pytest.mark.parametrize("alias", [True, False])
def test_a_view_with_odd_strides_on_size_one_dims_arrives_in_the_default_layout(alias):
    """A permuted [1, 1, 3, H, W] is contiguous to torch (size-1 dimensions' strides do not count), but DLPack gave
    JAX its strides as the layout (0, 2, 1, 3, 4); a program compiled for it then refused the next, plain input of the
    same shape (Cosmos 2.5 transfer's encodes, in the second environment)."""
    t = torch.randn(1, 1, 3, 8, 8).permute(0, 2, 1, 3, 4)
    assert t.is_contiguous() and t.stride() != (192, 64, 64, 8, 1)
    a = convert.to_jax(t, alias=alias)
    assert a.format.layout.major_to_minor == (0, 1, 2, 3, 4), a.format
    np.testing.assert_array_equal(np.asarray(a), t.numpy())


def test_float64_takes_the_host_path():
    t = torch.ones(3, dtype=torch.float64)
    assert np.asarray(convert.to_jax(t, jnp.float32, alias=True)).tolist() == [1.0, 1.0, 1.0]


def test_a_result_comes_back_without_a_copy_and_cast_where_it_is():
    a = jnp.arange(12, dtype=jnp.float32).reshape(3, 4) * 2
    t = convert.to_torch(a)
    assert t.data_ptr() == a.unsafe_buffer_pointer(), "a result was copied where memory is shared"
    b = convert.to_torch(a, dtype=torch.bfloat16)
    assert b.dtype == torch.bfloat16 and b.float().tolist() == t.tolist()


def test_a_result_for_a_device_jax_does_not_share_goes_through_the_host():
    t = convert.to_torch(jnp.ones(4), device="meta")  # a device no JAX array shares memory with
    assert t.device.type == "meta" and t.shape == (4,)
