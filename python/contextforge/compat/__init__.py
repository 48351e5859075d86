"""Drop-in APIs of other memory libraries over contextforge: ``.mem0``."""
