"""A module that starts a thread when imported: --python_preload must refuse to fork from it."""
import threading

threading.Thread(target=threading.Event().wait, daemon=True).start()
