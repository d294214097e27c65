"""pip install . : builds the C++ engine (clustertwin._core) with CMake, then packages python/clustertwin.

The CMake build directory is $CLUSTERTWIN_BUILD_DIR (default: build/, the one the README's
commands use), so a tree that is already built installs in seconds. The C++ dependencies are
Debian packages (tools/setup.sh installs them)."""
import os
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build = os.environ.get("CLUSTERTWIN_BUILD_DIR", os.path.join(ROOT, "build"))
        if not os.path.isfile(os.path.join(build, "build.ninja")):
            subprocess.check_call(["cmake", "-S", ROOT, "-B", build, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                                   f"-DPython3_EXECUTABLE={sys.executable}"])
        subprocess.check_call(["cmake", "--build", build, "--target", "_core"])
        # CMake writes the module into python/clustertwin/; setuptools expects it at the ext path.
        built = [f for f in os.listdir(os.path.join(ROOT, "python", "clustertwin")) if f.startswith("_core")
                 and f.endswith(".so")]
        if not built:
            raise RuntimeError("CMake built no clustertwin/_core*.so")
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        self.copy_file(os.path.join(ROOT, "python", "clustertwin", sorted(built)[-1]), target)


setup(ext_modules=[Extension("clustertwin._core", sources=[])], cmdclass={"build_ext": CMakeBuild})
