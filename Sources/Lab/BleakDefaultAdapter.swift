/// Makes bleak's default adapter in the lab the central's controller, as on a machine with one adapter.
///
/// The lab VM has one controller per peripheral and one for the central, all under one bluetoothd. bleak picks its
/// default adapter as the first powered adapter with the "central" role (bleak 3.1,
/// `bleak/backends/bluezdbus/manager.py`, `BlueZManager.get_default_adapter`), and it keeps the adapters in a Python
/// `set`, whose order changes with each process's string hashing. Every LE adapter has that role (bluetoothd
/// `property_get_roles`, src/adapter.c), so an unmodified script would scan from a peripheral's own controller about
/// half the time and never find it. The lab puts a `sitecustomize` module on COMMAND's `PYTHONPATH` that, once bleak's
/// BlueZ manager is imported, prefers `/org/bluez/$BLEMU_LAB_CENTRAL` when it is powered, and otherwise leaves
/// bleak's choice alone; an explicit `bluez={"adapter": ...}` is never touched. It then runs the `sitecustomize`
/// it shadows (Debian ships one), so the interpreter starts as it would without it.
enum BleakDefaultAdapter {
    /// The directory in the results share that goes first on COMMAND's `PYTHONPATH`.
    static let directory = "python"
    /// The module's file name inside `directory`.
    static let file = "sitecustomize.py"

    /// The module's source. Standard library only; it never imports bleak itself, and any surprise in bleak's
    /// internals (a renamed method, a missing attribute) falls back to bleak's own choice.
    static let source = #"""
        # Written by the blemu lab (Sources/Lab/BleakDefaultAdapter.swift): bleak's default adapter is the central's
        # controller ($BLEMU_LAB_CENTRAL) when it is powered, as on a machine with one adapter; see docs/lab.md.
        import importlib.abc
        import importlib.machinery
        import importlib.util
        import os
        import sys

        _MANAGER = "bleak.backends.bluezdbus.manager"


        def _prefer_central(module):
            central = os.environ.get("BLEMU_LAB_CENTRAL")
            manager = getattr(module, "BlueZManager", None)
            original = getattr(manager, "get_default_adapter", None)
            if not central or original is None:
                return
            path = "/org/bluez/" + central

            def get_default_adapter(self):
                try:
                    adapter = self._properties[path]["org.bluez.Adapter1"]
                    if path in self._adapters and adapter["Powered"]:
                        return path
                except (AttributeError, KeyError, TypeError):
                    pass
                return original(self)

            get_default_adapter.__doc__ = original.__doc__
            manager.get_default_adapter = get_default_adapter


        class _BleakManagerHook(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path, target=None):
                if name != _MANAGER:
                    return None
                spec = importlib.machinery.PathFinder.find_spec(name, path, target)
                loader = getattr(spec, "loader", None)
                if loader is None or not hasattr(loader, "exec_module"):
                    return spec
                execute = loader.exec_module

                def exec_module(module):
                    execute(module)
                    _prefer_central(module)

                loader.exec_module = exec_module
                return spec


        sys.meta_path.insert(0, _BleakManagerHook())


        def _run_shadowed_sitecustomize():
            here = os.path.dirname(os.path.abspath(__file__))
            for entry in sys.path:
                folder = os.path.abspath(entry or os.curdir)
                candidate = os.path.join(folder, "sitecustomize.py")
                if folder != here and os.path.isfile(candidate):
                    spec = importlib.util.spec_from_file_location("_shadowed_sitecustomize", candidate)
                    spec.loader.exec_module(importlib.util.module_from_spec(spec))
                    return


        _run_shadowed_sitecustomize()
        """#
}
