"""A CPU torch training loop as an ML engineer writes one, under strace with the shim:
200 small .npy/.pt samples, a shuffling DataLoader with 2 persistent workers started by
fork (LD_PRELOAD) and by spawn (under `colabtrace run`), a checkpoint every 5 steps, an
evaluation pass. Per process and per file the report equals strace; processes, exit
codes and libraries too; the run is healthy, so no warning or error. The forkserver
start method, dataset formats and pytest are in test_audit_loaders.py."""
import os
import unittest

from ctharness import SYSTEM_PYTHON
from straceaudit import OnceAudit

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN = os.path.join(HERE, "programs", "train.py")


class TrainingAudit(OnceAudit, unittest.TestCase):
    MODULES = ("torch", "numpy")
    PROGRAMS = (SYSTEM_PYTHON,)
    MIN_FILES = 201  # the samples and the checkpoint
    START = ""  # the DataLoader's start method (multiprocessing_context); "" is fork

    @property
    def SCRIPT(self):
        return f"cp {TRAIN} train.py\n{SYSTEM_PYTHON} train.py . {self.START}"

    def test_the_run_behaved_as_bare(self):
        self.assertEqual(self.run_.returncode, 0, self.run_.stderr)
        self.assertEqual(self.run_.stdout, "steps 26 ckpt 25 eval 200\n")

    def test_each_sample_opened_once_an_epoch_and_once_in_eval(self):
        data = os.path.join(self.root, "data")
        opens = {}
        for (pid, path), row in self.run_.rows.items():
            if path.startswith(data + "/"):
                opens[path] = opens.get(path, 0) + row["opens"]
        self.assertEqual(len(opens), 200)
        # Written once (np.save, torch.save), read in 2 epochs by the workers and once by
        # the evaluation in the main process.
        self.assertEqual(set(opens.values()), {4}, opens)
        workers = [p for p in self.run_.report["processes"] if p["pid"] != self.main_pid()
                   and any(pid == p["pid"] and path.startswith(data + "/") for pid, path in self.run_.rows)]
        self.assertEqual(len(workers), 2, [p["argv"] for p in self.run_.report["processes"]])

    def main_pid(self):
        return next(p["pid"] for p in self.run_.report["processes"] if p["argv"][1:] == ["train.py", "."] +
                    ([self.START] if self.START else []))


class TrainingSpawnUnderRunAudit(TrainingAudit):
    START = "spawn"
    VIA_RUN = True


if __name__ == "__main__":
    unittest.main()
