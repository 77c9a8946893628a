"""Actions run when a request completes: an R-call's access completes locally (or at
the target, for a read) when its request does, whichever call completes it."""
import functools

from .clock import clock



def on_completion(request, action):
    """Run ``action`` when the request completes (after any action set before)."""
    earlier = getattr(request, "__dict__", {}).get("_race_done")
    request._race_done = action if earlier is None else lambda: (earlier(), action())


def completed(*requests):
    for request in requests:
        action = getattr(request, "__dict__", {}).pop("_race_done", None)
        if action is not None:
            action()


def install_waitall(Request):
    """A Waitall looks at the rank's own loads and stores once, not at each of its
    requests' releases: the program runs nothing between them."""
    waitall = Request.Waitall.__func__

    def Waitall(cls, requests, statuses=None):
        c = clock()
        before = c.one_look()
        try:
            return waitall(cls, requests, statuses)
        finally:
            c.end_one_look(before)
    Request.Waitall = classmethod(functools.wraps(waitall)(Waitall))


def install_requests(classes):
    for cls in classes:
        wait, test = getattr(cls, "Wait"), getattr(cls, "Test")

        def Wait(self, status=None, _wait=wait):
            inner = getattr(self, "_inner", None)   # a persistent request's operation
            result = _wait(self, status)
            completed(self, inner)
            return result

        def Test(self, status=None, _test=test):
            inner = getattr(self, "_inner", None)
            done = _test(self, status)
            if done:
                completed(self, inner)
            return done

        cls.Wait, cls.Test = Wait, Test
