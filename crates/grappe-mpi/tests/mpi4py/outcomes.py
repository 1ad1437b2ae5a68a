"""Runs mpi4py's own test suite (its test/main.py, with the arguments
given) and writes what became of every test on this rank to
OUTDIR/rank-N.json: {"test id": "pass" | "fail" | "error" | "skip" |
"xfail" | "xpass"}. Used by run-suite, which compares the outcomes of
two MPI libraries.

Usage: python3 outcomes.py OUTDIR MPI4PY_TEST_DIR [main.py arguments...]
"""

import json
import os
import sys
import unittest

OUTCOMES = {}


class RecordingResult(unittest.TextTestResult):
    """A unittest result that also keeps each test's outcome."""

    def _keep(self, test, outcome):
        OUTCOMES[test.id()] = outcome

    def addSuccess(self, test):
        super().addSuccess(test)
        self._keep(test, "pass")

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._keep(test, "fail")

    def addError(self, test, err):
        super().addError(test, err)
        self._keep(test, "error")

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._keep(test, "skip")

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._keep(test, "xfail")

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._keep(test, "xpass")

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is not None:
            failed = issubclass(err[0], test.failureException)
            self._keep(test, "fail" if failed else "error")

    def stopTestRun(self):
        super().stopTestRun()
        from mpi4py import MPI

        rank = MPI.COMM_WORLD.Get_rank()
        path = os.path.join(OUTDIR, f"rank-{rank}.json")
        with open(path, "w", encoding="utf-8") as out:
            json.dump(OUTCOMES, out, indent=0, sort_keys=True)


if __name__ == "__main__":
    OUTDIR, TESTDIR = sys.argv[1], sys.argv[2]
    os.makedirs(OUTDIR, exist_ok=True)
    sys.path.insert(0, TESTDIR)
    os.chdir(TESTDIR)
    sys.dont_write_bytecode = True
    unittest.TextTestRunner.resultclass = RecordingResult
    import main as suite  # mpi4py's test/main.py

    sys.argv = [os.path.join(TESTDIR, "main.py")] + sys.argv[3:]
    suite.main(module=None)
