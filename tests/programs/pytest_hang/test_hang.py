# Passes, then hangs at interpreter exit: a non-daemon thread keeps the process alive after
# pytest printed its summary (what GPU runtimes sometimes do at teardown).
import os
import threading
import time


def test_passes_and_leaves_a_thread():
    with open(os.environ["PIDFILE"], "a") as f:
        f.write(f"{os.getpid()}\n")
    threading.Thread(target=lambda: time.sleep(1000), daemon=False).start()
