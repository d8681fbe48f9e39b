"""The sandbox image recipe: `ensure_image()` returns a tag, building it offline if missing."""

from sandbox.image.build import base_tag, ensure_image, sandbox_tag

__all__ = ["base_tag", "ensure_image", "sandbox_tag"]
