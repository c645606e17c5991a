# Python multiprocessing with the start method given as argv[1] (fork or
# spawn): a pool, processes with a queue, both kinds of pipe, a lock and
# shared values, an event, and exit codes.
import multiprocessing as mp
import os
import sys


def square(x):
    return x * x


def producer(q, base):
    for i in range(10):
        q.put(base + i)
    q.put(None)


def add_locked(lock, value, n):
    for _ in range(n):
        with lock:
            value.value += 1


def fill(arr, start):
    for i in range(start, len(arr), 2):
        arr[i] = i * i


def echo_pipe(conn):
    while True:
        msg = conn.recv()
        if msg is None:
            break
        conn.send(msg.upper())
    conn.close()


def wait_event(ev, q):
    ev.wait(10)
    q.put("event seen")


def exit_with(code):
    sys.exit(code)


def terminate_self():
    os.kill(os.getpid(), 15)


def main():
    method = sys.argv[1]
    ctx = mp.get_context(method)
    print("start method:", ctx.get_start_method())

    with ctx.Pool(3) as pool:
        print("pool.map:", sum(pool.map(square, range(100))))
        print("pool.apply_async:", pool.apply_async(square, (12,)).get(timeout=60))
        print("pool.imap ordered:", list(pool.imap(square, range(8))))

    q = ctx.Queue()
    procs = [ctx.Process(target=producer, args=(q, b)) for b in (0, 100, 200)]
    for p in procs:
        p.start()
    items, done = [], 0
    while done < len(procs):
        v = q.get(timeout=60)
        if v is None:
            done += 1
        else:
            items.append(v)
    for p in procs:
        p.join()
    print("queue from 3 processes:", len(items), sum(items))

    lock = ctx.Lock()
    value = ctx.Value("i", 0, lock=False)
    workers = [ctx.Process(target=add_locked, args=(lock, value, 500)) for _ in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    print("shared value under a lock:", value.value)

    arr = ctx.Array("q", 20)
    fills = [ctx.Process(target=fill, args=(arr, s)) for s in (0, 1)]
    for f in fills:
        f.start()
    for f in fills:
        f.join()
    print("shared array:", list(arr)[:8], sum(arr))

    for duplex in (False, True):
        if duplex:
            parent, child = ctx.Pipe(duplex=True)
            p = ctx.Process(target=echo_pipe, args=(child,))
            p.start()
            child.close()
            replies = []
            for word in ("alpha", "beta", "gamma"):
                parent.send(word)
                replies.append(parent.recv())
            parent.send(None)
            p.join()
            print("duplex pipe:", replies)
        else:
            r, w = ctx.Pipe(duplex=False)
            p = ctx.Process(target=square, args=(3,))
            p.start()
            p.join()
            w.send({"k": [1, 2, 3]})
            print("one-way pipe:", r.recv())

    ev = ctx.Event()
    q2 = ctx.Queue()
    p = ctx.Process(target=wait_event, args=(ev, q2))
    p.start()
    ev.set()
    print("event:", q2.get(timeout=60))
    p.join()

    codes = []
    for code in (0, 3):
        p = ctx.Process(target=exit_with, args=(code,))
        p.start()
        p.join()
        codes.append(p.exitcode)
    p = ctx.Process(target=terminate_self)
    p.start()
    p.join()
    codes.append(p.exitcode)
    print("exit codes:", codes)
    print("children left:", len(mp.active_children()))


if __name__ == "__main__":
    main()
