# progress_worker.py STEPS VICTIM SECONDS_PER_STEP: a Python worker that reports progress through
# DDPRUN_PROGRESS_FILE alone (the one-line contract), for the hang tests. Each step it writes its
# step number there. In the first attempt (TORCHELASTIC_RESTART_COUNT 0) rank VICTIM stops at step
# STEPS // 2 inside stuck_in_python_function, a name the Python stacks must show. Prints
# "done <steps> steps" at the end. Standard library only.
import os
import pathlib
import sys
import time


def stuck_in_python_function():
    print("rank stuck in stuck_in_python_function", flush=True)
    while True:
        time.sleep(3600)


def main():
    steps, victim, pause = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    rank = int(os.environ["RANK"])
    first_attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") == "0"
    progress = pathlib.Path(os.environ["DDPRUN_PROGRESS_FILE"])
    for step in range(1, steps + 1):
        if first_attempt and rank == victim and step == steps // 2:
            stuck_in_python_function()
        progress.write_text(str(step))
        time.sleep(pause)
    print(f"done {steps} steps", flush=True)


if __name__ == "__main__":
    main()
