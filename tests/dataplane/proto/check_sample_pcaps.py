#!/usr/bin/env python3
"""Checks that pcaps/ holds exactly what make-sample-pcaps writes (so pcaps/README.md's
description of how they were made stays true). Usage: check_sample_pcaps.py GENERATOR DIR"""
import filecmp
import os
import subprocess
import sys
import tempfile


def main():
    generator, committed = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as out:
        subprocess.run([generator, out], check=True)
        made = sorted(os.listdir(out))
        failed = 0
        for name in made:
            theirs = os.path.join(committed, name)
            if not os.path.exists(theirs):
                print(f"{name}: written by the generator but not in {committed}")
                failed += 1
            elif not filecmp.cmp(os.path.join(out, name), theirs, shallow=False):
                print(f"{name}: differs from a fresh run of the generator "
                      f"(regenerate: {generator} {committed})")
                failed += 1
            else:
                print(f"{name}: reproducible")
    return 1 if failed or not made else 0


if __name__ == "__main__":
    sys.exit(main())
