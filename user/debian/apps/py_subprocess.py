# Python subprocess: run, pipes both ways, a pipeline between two
# children, environment and working directory, exit codes and signals,
# and a timeout that kills its child.
import os
import signal
import subprocess
import sys

r = subprocess.run(["echo", "hello", "from", "echo"], capture_output=True, text=True)
print("run:", repr(r.stdout), r.returncode)

r = subprocess.run(["sh", "-c", "exit 7"])
print("exit code:", r.returncode)

p = subprocess.Popen(["sort", "-n"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
out, _ = p.communicate("".join(f"{n}\n" for n in (5, 3, 11, 1, 8)))
print("sort through pipes:", out.split(), p.returncode)

# A pipeline: seq | tr, connected by the parent.
seq = subprocess.Popen(["seq", "1", "5"], stdout=subprocess.PIPE)
tr = subprocess.Popen(["tr", "\\n", "+"], stdin=seq.stdout, stdout=subprocess.PIPE, text=True)
seq.stdout.close()
print("pipeline:", tr.communicate()[0], seq.wait(), tr.returncode)

r = subprocess.run(["sh", "-c", "echo $GREETING; pwd"], env={"GREETING": "hi", "PATH": os.environ["PATH"]},
                   cwd="/etc", capture_output=True, text=True)
print("env and cwd:", r.stdout.split())

r = subprocess.run(["sh", "-c", "echo to-stderr >&2"], stderr=subprocess.STDOUT, stdout=subprocess.PIPE, text=True)
print("stderr merged:", r.stdout.strip())

p = subprocess.Popen(["sleep", "30"])
p.send_signal(signal.SIGTERM)
print("killed by signal:", p.wait())

try:
    subprocess.run(["sleep", "30"], timeout=0.5)
except subprocess.TimeoutExpired as e:
    print("timeout expired:", e.cmd)

try:
    subprocess.run(["/nonexistent/program"])
except FileNotFoundError as e:
    print("missing program:", e.errno, e.strerror)

r = subprocess.run([sys.executable, "-c", "import sys; print(sys.argv[1:]); sys.exit(3)", "a b", "c"],
                   capture_output=True, text=True)
print("python child:", r.stdout.strip(), r.returncode)

# Many short children, reaped in order.
codes = [subprocess.run(["sh", "-c", f"exit {i}"]).returncode for i in range(20)]
print("twenty children:", codes)

# Inherited descriptors: pass_fds keeps one open in the child.
rfd, wfd = os.pipe()
subprocess.run(["sh", "-c", f"echo through-fd >&{wfd}"], pass_fds=(wfd,))
os.close(wfd)
print("pass_fds:", os.read(rfd, 100).decode().strip())
os.close(rfd)
