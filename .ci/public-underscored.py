#!/usr/bin/env python3
"""Fails if Hook's or HookBind's public API has an underscored name other
than the entry points @Hookable's expansion calls (and the few declarations
their public signatures need), which carry @_documentation(visibility:
internal). The package's own modules meet through `package` access.

Reads the symbol graphs swift-symbolgraph-extract makes from the debug
build (`swift build` first), with internal symbols included, so that
underscored public names (which the default graph leaves out) are listed."""
import json, pathlib, subprocess, sys, tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
BUILD = ROOT / ".build" / "x86_64-unknown-linux-gnu" / "debug"
C_MODULES = ["CFFIShim", "CHookThreads", "CImportSlots", "CEntryHooks", "CHookBindThread"]
# What @Hookable's expansion calls, and what public signatures need.
ALLOWED = {
    "Hook": {"_HookableSlot", "_hookableValue", "_hookableAddress", "_hookableFieldAddress", "_hookableActorSlot",
             "_hookableLoad", "_hookablePoint", "_hookableIsHooked", "_hookableCall", "_hookableThrowingCall",
             "_hookableUnhooked", "_hookableUnhookedAsync", "_hookableSet",
             "_CPointer", "_ImportHookMaking", "_EntryHookMaking"},
    "HookBind": set(),
}

def public_underscored(module, output):
    args = ["swift", "symbolgraph-extract", "-module-name", module, "-I", str(BUILD / "Modules"),
            "-target", "x86_64-unknown-linux-gnu", "-minimum-access-level", "internal",
            "-include-spi-symbols", "-output-dir", output]
    for c in C_MODULES:
        args += ["-Xcc", f"-fmodule-map-file={BUILD / (c + '.build') / 'module.modulemap'}",
                 "-I", str(ROOT / "Sources" / c / "include")]
    subprocess.run(args, check=True)
    names = set()
    for path in pathlib.Path(output).glob(f"{module}*.symbols.json"):
        graph = json.load(open(path))
        for symbol in graph["symbols"]:
            if symbol["accessLevel"] != "public":
                continue
            # A name of the module's own: the last path component.
            name = symbol["pathComponents"][-1].split("(")[0]
            if name.startswith("_"):
                names.add(name)
    return names

failed = False
with tempfile.TemporaryDirectory() as output:
    for module in ["Hook", "HookBind"]:
        extra = sorted(public_underscored(module, output) - ALLOWED[module])
        if extra:
            failed = True
            print(f"public-underscored: {module} has public underscored names: {', '.join(extra)}")
            print("  (between the package's modules use `package`; an entry point for macro expansions")
            print("   gets @_documentation(visibility: internal) and a place in .ci/public-underscored.py)")
        else:
            print(f"public-underscored: {module}: none but the {len(ALLOWED[module])} allowed")
sys.exit(1 if failed else 0)
