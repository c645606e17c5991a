# Python threads: locks, conditions, queues, a thread pool, thread-local
# data, events and barriers. Prints only results that do not depend on
# scheduling.
import queue
import threading
from concurrent.futures import ThreadPoolExecutor

# A counter under a lock, from 8 threads.
lock = threading.Lock()
count = 0


def bump(n):
    global count
    for _ in range(n):
        with lock:
            count += 1


threads = [threading.Thread(target=bump, args=(5000,)) for _ in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("locked counter:", count)

# Producer/consumer over a bounded queue.
q = queue.Queue(maxsize=4)
got = []


def consume():
    while True:
        item = q.get()
        if item is None:
            break
        got.append(item * item)


consumers = [threading.Thread(target=consume) for _ in range(3)]
for c in consumers:
    c.start()
for i in range(200):
    q.put(i)
for _ in consumers:
    q.put(None)
for c in consumers:
    c.join()
print("queue: items", len(got), "sum", sum(got))

# A condition variable handing a token round a ring of threads.
cond = threading.Condition()
turn = [0]
order = []


def ring(me, n, rounds):
    for r in range(rounds):
        with cond:
            while turn[0] % n != me:
                cond.wait()
            order.append(me)
            turn[0] += 1
            cond.notify_all()


ring_threads = [threading.Thread(target=ring, args=(i, 4, 25)) for i in range(4)]
for t in ring_threads:
    t.start()
for t in ring_threads:
    t.join()
print("ring order ok:", order == [i % 4 for i in range(100)])

# A thread pool mapping a pure function.
with ThreadPoolExecutor(max_workers=4) as pool:
    squares = list(pool.map(lambda x: x * x, range(100)))
print("pool map:", sum(squares), squares[:5])

# Thread-local storage, an event and a barrier.
local = threading.local()
barrier = threading.Barrier(5)
start = threading.Event()
seen = []


def worker(i):
    local.value = i * 10
    start.wait()
    barrier.wait()
    seen.append(local.value)


ws = [threading.Thread(target=worker, args=(i,)) for i in range(5)]
for w in ws:
    w.start()
start.set()
for w in ws:
    w.join()
print("thread-local values:", sorted(seen))

# Timers: a Timer fires, a cancelled one does not.
fired = []
t1 = threading.Timer(0.05, lambda: fired.append("a"))
t2 = threading.Timer(0.05, lambda: fired.append("b"))
t1.start()
t2.start()
t2.cancel()
t1.join()
t2.join()
print("timers fired:", fired)
print("threads alive at end:", threading.active_count())
