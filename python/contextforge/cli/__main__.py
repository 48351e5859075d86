"""``python -m contextforge.cli``."""

from .main import main

if __name__ == "__main__":
    main()
