# Python asyncio: timers in order, a Unix-socket echo server with several
# clients, a socketpair, wait_for timeouts, a subprocess, and tasks
# cancelled. Only results that do not depend on timing are printed.
import asyncio
import os
import socket
import tempfile


async def timers():
    order = []
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    for delay, name in ((0.03, "c"), (0.01, "a"), (0.02, "b")):
        loop.call_later(delay, order.append, name)
    loop.call_later(0.05, done.set_result, None)
    loop.call_soon(order.append, "soon")
    await done
    print("timers fired in order:", order)

    slept = []

    async def sleeper(d, name):
        await asyncio.sleep(d)
        slept.append(name)

    await asyncio.gather(sleeper(0.04, "slow"), sleeper(0.0, "now"), sleeper(0.02, "mid"))
    print("sleeps finished in order:", slept)


async def handle(reader, writer):
    while True:
        line = await reader.readline()
        if not line:
            break
        writer.write(line.upper())
        await writer.drain()
    writer.close()
    await writer.wait_closed()


async def unix_server(path):
    server = await asyncio.start_unix_server(handle, path=path)

    async def client(n):
        reader, writer = await asyncio.open_unix_connection(path)
        replies = []
        for i in range(5):
            writer.write(f"client {n} line {i}\n".encode())
            await writer.drain()
            replies.append((await reader.readline()).decode().strip())
        writer.close()
        await writer.wait_closed()
        return replies

    results = await asyncio.gather(*(client(n) for n in range(4)))
    server.close()
    await server.wait_closed()
    print("unix server: clients", len(results), "replies", sum(len(r) for r in results))
    print("first client:", results[0][:2])


async def pair():
    a, b = socket.socketpair()
    r1, w1 = await asyncio.open_connection(sock=a)
    r2, w2 = await asyncio.open_connection(sock=b)
    w1.write(b"ping\n")
    await w1.drain()
    got = await r2.readline()
    w2.write(got.replace(b"ping", b"pong"))
    await w2.drain()
    print("socketpair:", (await r1.readline()).decode().strip())
    for w in (w1, w2):
        w.close()
        await w.wait_closed()


async def timeouts():
    try:
        await asyncio.wait_for(asyncio.sleep(10), timeout=0.05)
    except asyncio.TimeoutError:
        print("wait_for timed out")
    task = asyncio.create_task(asyncio.sleep(10))
    await asyncio.sleep(0.01)
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        print("task cancelled:", task.cancelled())


async def subprocess_run():
    proc = await asyncio.create_subprocess_exec(
        "sh", "-c", "read x; echo got $x; exit 4",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
    out, _ = await proc.communicate(b"input\n")
    print("subprocess:", out.decode().strip(), proc.returncode)


async def queue_pipeline():
    q = asyncio.Queue(maxsize=2)
    total = 0

    async def produce():
        for i in range(50):
            await q.put(i)
        await q.put(None)

    async def consume():
        nonlocal total
        while (item := await q.get()) is not None:
            total += item

    await asyncio.gather(produce(), consume())
    print("queue total:", total)


async def main():
    await timers()
    with tempfile.TemporaryDirectory() as d:
        await unix_server(os.path.join(d, "echo.sock"))
    await pair()
    await timeouts()
    await subprocess_run()
    await queue_pipeline()


asyncio.run(main())
