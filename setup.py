# The C agent core is compiled by cffi at install; everything else is in pyproject.toml.
from setuptools import setup

setup(cffi_modules=["ctypes_core/build.py:ffibuilder"])
