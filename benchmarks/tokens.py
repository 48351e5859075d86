"""Token counts for the peers' budget packing.

contextforge counts tokens with OpenAI's o200k_base vocabulary. The peers use the
same vocabulary through tiktoken when it can be loaded offline: the BPE file is
taken from a local copy (the tiktoken-rs crate in the Cargo registry ships it, or
point BENCH_O200K_FILE at one), since tiktoken would otherwise download it. When
neither is available the peers fall back to words * 1.3; the report says which
counter was used.
"""

from __future__ import annotations

import glob
import hashlib
import os
import sys
import tempfile
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
_REGISTRY_GLOB = "~/.cargo/registry/src/*/tiktoken-rs-*/assets/o200k_base.tiktoken"


def _local_o200k() -> Path | None:
    explicit = os.environ.get("BENCH_O200K_FILE")
    if explicit:
        return Path(explicit) if Path(explicit).is_file() else None
    found = sorted(glob.glob(os.path.expanduser(_REGISTRY_GLOB)))
    return Path(found[-1]) if found else None


@lru_cache(maxsize=1)
def counter() -> tuple[str, Callable[[str], int]]:
    """Returns (name, count): the counter every peer uses in this run."""
    local = _local_o200k()
    if local is not None:
        try:
            import tiktoken

            # tiktoken looks for a downloaded file under TIKTOKEN_CACHE_DIR, keyed
            # by the SHA-1 of its URL; seed that cache with the local copy.
            cache = Path(tempfile.gettempdir()) / "bench-tiktoken-cache"
            cache.mkdir(exist_ok=True)
            cached = cache / hashlib.sha1(O200K_URL.encode()).hexdigest()
            if not cached.exists():
                cached.write_bytes(local.read_bytes())
            os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)
            encoding = tiktoken.get_encoding("o200k_base")
            return "o200k_base (tiktoken)", lambda text: len(encoding.encode_ordinary(text))
        except Exception as err:  # noqa: BLE001 - any failure means: use the estimate
            print(f"tiktoken o200k_base unavailable ({err}); using words*1.3", file=sys.stderr)
    return "words*1.3 (estimate)", lambda text: int(len(text.split()) * 1.3 + 0.999)


def count(text: str) -> int:
    """Tokens in `text`; the counter loads on first use, so opening a store does not pay for it."""
    return counter()[1](text)
