"""An HTML template for `dvc plots show` / `dvc plots diff` that draws without the network.

DVC's page loads vega, vega-lite and vega-embed from a CDN. This template inlines the three libraries as shipped by
the PyPI package django-js-lib-vega-embed (module `js_lib_vega_embed`: vega 5, vega-lite 5, vega-embed 6, the
majors DVC's page asks for), and leaves out DVC's `{scripts}` placeholder, so the page fetches nothing:

    python -m fedlib.reporting.plots_page /tmp/offline.html
    dvc plots diff HEAD~1 --html-template /tmp/offline.html -o /tmp/plots     # then open /tmp/plots/index.html
"""
from __future__ import annotations

import sys
from importlib import resources
from pathlib import Path

#: the libraries in load order (vega-lite and vega-embed need vega)
LIBRARIES = ("vega5.js", "vega-lite5.js", "vega-embed6.js")


def template() -> str:
    """The page: the three libraries inline, then DVC's `{plot_divs}`."""
    try:
        static = resources.files("js_lib_vega_embed") / "static" / "js_lib_vega_embed"
    except ModuleNotFoundError:
        raise SystemExit("fedlib.reporting.plots_page: the package django-js-lib-vega-embed is not installed (pip "
                         "install 'fedlib[pipeline]')") from None
    scripts = "\n".join(f"<script>{(static / name).read_text(encoding='utf-8')}</script>" for name in LIBRARIES)
    return ("<!DOCTYPE html>\n<html>\n<head>\n<meta charset=\"utf-8\">\n<title>DVC plots (offline)</title>\n"
            f"{scripts}\n</head>\n<body>\n{{plot_divs}}\n</body>\n</html>\n")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m fedlib.reporting.plots_page OUTPUT.html", file=sys.stderr)
        return 2
    Path(argv[0]).write_text(template(), encoding="utf-8")
    print(f"wrote {argv[0]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
