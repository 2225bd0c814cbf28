"""An HTTP server for saved task models: `create_app(model)` (starlette), run by `kerasbert serve`.

Needs the `serve` extra: `pip install 'kerasbert[serve]'` (starlette, uvicorn).
"""

from kerasbert.serving.app import ServingLimits, create_app

__all__ = ["ServingLimits", "create_app"]
