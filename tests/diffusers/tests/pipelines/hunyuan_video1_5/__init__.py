# Copyright 2025 The HuggingFace Team.
