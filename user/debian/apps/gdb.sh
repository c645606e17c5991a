# gdb -batch on a small program built here with -g: a breakpoint, run,
# a backtrace, rip, stepi, finish, a watchpoint-free continue to exit.
# gdb turns address randomization off (personality), so the addresses it
# prints are the kernel's no-randomization layout; the process id is
# replaced by N.
set -e
gcc -g -O0 -o hello_dbg "$APPS/hello_dbg.c"
gdb -batch -nx \
    -ex 'break leaf' \
    -ex 'run' \
    -ex 'bt' \
    -ex 'info registers rip' \
    -ex 'stepi' \
    -ex 'info registers rip' \
    -ex 'next' \
    -ex 'print y' \
    -ex 'finish' \
    -ex 'delete' \
    -ex 'continue' \
    ./hello_dbg 2>&1 | sed -e 's/process [0-9]*/process N/' -e 's/LWP [0-9]*/LWP N/'
