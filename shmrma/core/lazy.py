"""numpy, imported on first use.

Importing numpy costs about 0.1 s and starts a BLAS thread, and the launcher
must fork its ranks before any thread exists; so the runtime's modules refer to
``lazy.numpy`` and a program that never touches a buffer never loads it.
"""
import importlib


class LazyModule:
    def __init__(self, name):
        self._name = name
        self._module = None

    def __getattr__(self, attribute):
        module = self._module
        if module is None:
            module = self._module = importlib.import_module(self._name)
        value = getattr(module, attribute)
        # kept on the proxy: later uses find it without this call (hot in numpy-heavy loops)
        setattr(self, attribute, value)
        return value


numpy = LazyModule("numpy")
