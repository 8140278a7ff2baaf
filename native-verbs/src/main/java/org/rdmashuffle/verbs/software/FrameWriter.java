package org.rdmashuffle.verbs.software;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The frames waiting to go out on one link (every QP on it), and the loop that writes them. Posting
 * threads only queue a {@link Frame}; the writer encodes its header into memory of its own and sends
 * up to {@value #BATCH} frames per gathering write (one syscall for many small frames). A frame is
 * read once, when it is encoded, and not kept after: its owner may reuse it once the peer answers it.
 * Nothing here allocates per frame.
 */
final class FrameWriter {
    private static final int BATCH = 64;
    private static final Frame STOP = Frame.request((byte) 0, -1);

    private final ArrayDeque<Frame> queue = new ArrayDeque<>();
    /**
     * Held from taking a batch off the queue until it is written. A failing QP removes its frames
     * ({@link #removeFrom}) and then takes this once ({@link #awaitIdle}): after its error completions,
     * no frame of it is read from its memory.
     */
    private final ReentrantLock writing = new ReentrantLock();
    private final Frame[] batch = new Frame[BATCH];
    private final ByteBuffer[] headers = new ByteBuffer[BATCH];
    private ByteBuffer[] gather = new ByteBuffer[BATCH * 2];

    FrameWriter() {
        ByteBuffer all = ByteBuffer.allocateDirect(BATCH * Frame.HEADER);
        for (int i = 0; i < BATCH; i++) {
            headers[i] = all.slice(i * Frame.HEADER, Frame.HEADER);
        }
    }

    /** Queues a frame (its payload, if any, goes right after its header). */
    void add(Frame f) {
        synchronized (queue) {
            queue.add(f);
            if (queue.size() == 1) {
                queue.notify();
            }
        }
    }

    /** Drops every frame not yet taken by the writer (the QP failed). */
    void clear() {
        synchronized (queue) {
            queue.clear();
        }
    }

    /** Drops the frames QP {@code srcQpn} queued that the writer has not taken yet. */
    void removeFrom(int srcQpn) {
        synchronized (queue) {
            queue.removeIf(f -> f != STOP && f.srcQpn == srcQpn);
        }
    }

    /**
     * Waits until the writer is not writing a batch it took before this call; false if that takes
     * longer than {@code nanos} (a peer that stopped reading).
     */
    boolean awaitIdle(long nanos) throws InterruptedException {
        if (writing.isHeldByCurrentThread()) {
            return true;
        }
        if (!writing.tryLock(nanos, java.util.concurrent.TimeUnit.NANOSECONDS)) {
            return false;
        }
        writing.unlock();
        return true;
    }

    /** Writes {@code f} now, on the calling thread (a refusal on a link nothing else uses). */
    void writeNow(SocketChannel ch, Frame f) throws IOException {
        writing.lock();
        try {
            ByteBuffer h = f.encode();
            while (h.hasRemaining()) {
                ch.write(h);
            }
        } finally {
            writing.unlock();
        }
    }

    /** Drops what is queued and ends {@link #run} once it has written what it took. */
    void stop() {
        synchronized (queue) {
            queue.clear();
            queue.add(STOP);
            queue.notify();
        }
    }

    /** Writes frames until {@link #stop()}; throws what the channel throws. */
    void run(SocketChannel ch) throws IOException, InterruptedException {
        while (true) {
            synchronized (queue) {
                while (queue.isEmpty()) {
                    queue.wait();
                }
            }
            int buffers = 0;
            boolean stop = false;
            writing.lock();
            try {
                int taken = 0;
                synchronized (queue) {
                    for (Frame f; taken < BATCH && (f = queue.poll()) != null; ) {
                        batch[taken++] = f;
                    }
                }
                long left = 0;
                for (int i = 0; i < taken; i++) {
                    Frame f = batch[i];
                    batch[i] = null;
                    if (f == STOP) {
                        stop = true;
                        break;
                    }
                    int need = buffers + 1 + (f.payload == null ? 0 : f.payload.length);
                    if (need > gather.length) {
                        gather = Arrays.copyOf(gather, Math.max(need, gather.length * 2));
                    }
                    ByteBuffer h = headers[i].clear();
                    f.encode(h);
                    gather[buffers++] = h;
                    left += Frame.HEADER;
                    if (f.file != null) {
                        // What is gathered goes first, then the file's bytes straight from the page cache.
                        writeFully(ch, buffers, left);
                        Arrays.fill(gather, 0, buffers, null);
                        buffers = 0;
                        left = 0;
                        long sent = sendFromFile(f, ch);
                        if (sent < f.length) { // the socket was full: the rest through the mapping, which waits for room
                            gather[buffers++] = f.payload[0].position((int) sent);
                            left += f.length - sent;
                        }
                        continue;
                    }
                    if (f.payload != null) {
                        for (ByteBuffer p : f.payload) {
                            gather[buffers++] = p;
                            left += p.remaining();
                        }
                    }
                }
                Arrays.fill(batch, null);
                writeFully(ch, buffers, left);
            } finally {
                writing.unlock();
                Arrays.fill(gather, 0, buffers, null); // payloads are not kept past their write
            }
            if (stop) {
                return;
            }
        }
    }

    private void writeFully(SocketChannel ch, int buffers, long bytes) throws IOException {
        long left = bytes;
        while (left > 0) {
            left -= ch.write(gather, 0, buffers);
        }
    }

    /**
     * Sends as much of {@code f}'s payload from its file as the socket takes without waiting
     * ({@code sendfile}; the writer's socket is non-blocking underneath, as a virtual thread's is):
     * returns the bytes sent. A file shorter than its region breaks the link (its bytes cannot be made up).
     */
    private static long sendFromFile(Frame f, SocketChannel ch) throws IOException {
        long sent = 0;
        while (sent < f.length) {
            long n = f.file.transferTo(f.filePosition + sent, f.length - sent, ch);
            if (n <= 0) {
                if (f.file.size() < f.filePosition + f.length) {
                    throw new IOException("a registered file is shorter than its region: its answer cannot be sent");
                }
                break;
            }
            sent += n;
        }
        return sent;
    }
}
