"""`paranmt-kit`: the offline install kit for a machine without internet (docs/README-backtranslation.md,
"On a GPU machine without internet")."""

import argparse
import sys
from pathlib import Path

from corpus.errors import InputError
from kit.build import PACKAGE, Target, build, parse_have, parse_names

CHECKOUT = Path(__file__).resolve().parents[1]
LARGEST_SHOWN = 5


def parser() -> argparse.ArgumentParser:
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    command = argparse.ArgumentParser(prog="paranmt-kit", description=(
        f"Build a folder with every distribution a machine without internet needs to run {PACKAGE} "
        "(for its Python and platform, leaving out what it has) and install.sh, which installs them there."))
    command.add_argument("--out", type=Path, required=True, help="the kit's folder (new or empty)")
    command.add_argument("--python", default=here, help=f"the target's Python version (default {here}, this one's)")
    command.add_argument("--platform", default="manylinux_2_28_x86_64",
                         help="the target's newest platform tag; older manylinux tags are implied (default %(default)s)")
    command.add_argument("--have", default="", help="what the target has installed: names, or name==version, separated by commas "
                                                    "(torch,numpy==2.5.2); left out with what only they need")
    command.add_argument("--without", default="", help="dependencies not to carry, e.g. ctranslate2 for a CUDA 13 GPU machine "
                                                       "(the fairseq engine translates there)")
    command.add_argument("--extras", default="", help="the package's extras to carry too (dask,scheduler)")
    command.add_argument("--build-with", metavar="PYTHON",
                         help="an interpreter with the target's Python version and torch (this one: --build-with python3): it builds "
                              "fairseq-fixed's wheel, which the kit carries beside the sdist and install.sh tries first (seconds "
                              "instead of minutes of compiling there)")
    command.add_argument("--source", type=Path, default=CHECKOUT, help="the checkout the package's wheel is built from (default: this one)")
    return command


def main(argv: list[str] | None = None) -> int:
    """Build the kit and print its size, its largest files and what it assumes of the target; a
    mistake (an argument, no such version, no network) is one line and exit status 2."""
    args = parser().parse_args(argv)
    try:
        kit = build(args.source.resolve(), Target(args.python, args.platform), parse_have(args.have), args.out.resolve(),
                    without=parse_names("--without", args.without), extras=parse_names("--extras", args.extras), build_with=args.build_with)
    except InputError as error:
        print(f"paranmt-kit: error: {error}", file=sys.stderr)
        return 2
    (kit.folder / "kit.txt").write_text("\n".join([
        f"paranmt-kit {' '.join(argv if argv is not None else sys.argv[1:])}",
        f"target: Python {args.python}, {args.platform}",
        *(f"carries {name} {version}" for name, version in sorted(kit.carried.items())),
        *(f"carries {name} although the target has it: {why}" for name, why in sorted(kit.pinned_here.items())),
        *(f"assumes {line}" for _, _, line in kit.assumptions), ""]))
    files = kit.files()
    print(f"kit for Python {args.python} on {args.platform}: {len(files)} files, {kit.size() / 2**20:.1f} MiB in {kit.folder}")
    for path in files[:LARGEST_SHOWN]:
        print(f"  {path.stat().st_size / 2**20:5.1f} MiB  {path.name}")
    for name, why in sorted(kit.pinned_here.items()):
        print(f"carries {name} although the target has it: {why}")
    print(f"assumes the target's own {', '.join(name for name, fits, _ in kit.assumptions if fits) or '(none)'}: kit.txt says what each serves")
    for _, fits, line in kit.assumptions:
        if not fits:
            print(f"assumes {line}")
    print(f"install it there: {kit.folder}/install.sh --venv PATH   (or --target PATH; PYTHON=python3: the interpreter that has torch)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
