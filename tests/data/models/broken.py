"""A model file that raises on import (error-path test)."""

raise RuntimeError("this model file is broken on purpose")
