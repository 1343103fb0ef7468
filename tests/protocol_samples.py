"""User protocols the tests share, written as a user would against the plug-in interface."""

from snapcheck.reference.coordinated.chandy_lamport import ChandyLamport, ChandyLamportTask


class AckAtSnapshotTask(ChandyLamportTask):
    """Acknowledges its round at its snapshot, while its other inputs' channel state is
    still being recorded (an "acknowledged before durable" bug)."""

    acked = frozenset()

    def start(self, r, first):
        super().start(r, first)
        if r in self.active:  # recording goes on: acknowledged all the same
            self.acked |= {r}
            self.ctx.complete(r)

    def done(self, r):
        del self.active[r]
        if r not in self.acked:
            self.ctx.complete(r)


class AckAtSnapshot(ChandyLamport):
    name = "ack-at-snapshot"
    task_class = AckAtSnapshotTask
