"""A subprocess inherits the captured fds: its output is the script's output too."""
import subprocess
import sys

print("parent says hi", flush=True)
subprocess.run([sys.executable, "-c", "print('child says hi')"], check=True)
print("parent says bye")
