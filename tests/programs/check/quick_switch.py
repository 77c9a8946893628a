"""Runs a case program with the checker's quick path for Put and Get
(windowcheck.WindowCheck.quick_access) off (QUICK=off) or counted (QUICK=count,
printed to stderr at exit): test_check.py's differential test of that path.

    CASE=CASE.py QUICK=off|count python -m shmrma.run --check -n N quick_switch.py
"""
import atexit
import os
import runpy
import sys

from shmrma.check import report, windowcheck

SPY = '''
def quick_access(self, *args):
    if MODE == "off":
        return windowcheck.DECLINED
    done = quick(self, *args)
    taken[0] += done is not windowcheck.DECLINED
    return done
'''
spy = dict(MODE=os.environ["QUICK"], windowcheck=windowcheck, quick=windowcheck.WindowCheck.quick_access,
           taken=[0])
# compiled as the checker's own code, so reports skip its frame as they skip the checker's
exec(compile(SPY, os.path.join(report.PACKAGE_DIR, "check", "quick spy"), "exec"), spy)
windowcheck.WindowCheck.quick_access = spy["quick_access"]
if spy["MODE"] == "count":
    atexit.register(lambda: sys.stderr.write("quick accesses: %d\n" % spy["taken"][0]))
sys.argv = [os.environ["CASE"]] + sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
