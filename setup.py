"""Packages of vmp: everything under vmp/, plus the repository's top-level models/ folder
installed as ``vmp.models`` (so no top-level ``models`` package lands on a user's path).
The rest of the configuration is in pyproject.toml."""
from setuptools import find_packages, setup

setup(packages=find_packages(include=["vmp", "vmp.*"]) + ["vmp.models"],
      package_dir={"vmp.models": "models"})
