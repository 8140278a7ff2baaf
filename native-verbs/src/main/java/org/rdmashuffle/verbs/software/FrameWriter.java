package org.rdmashuffle.verbs.software;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The frames waiting to go out on one link (every QP on it), written without ever waiting for the
 * socket. A posting thread that finds the writer idle writes its frame itself, at once (no hand-off
 * to another thread); what the socket does not take stays here and the link's loop writes it when
 * the socket has room. Up to {@value #BATCH} frames go out per gathering write. A frame is read once,
 * when it is taken into a batch, and not kept after: its owner may reuse it once the peer answers it.
 *
 * <p>A failing QP {@link #detach}es: its queued frames are dropped, and whatever of its memory the
 * batch being written still points at is copied (a frame already begun must be finished, or the
 * stream falls out of step), so after its error completions nothing reads its memory. A batch stops
 * taking frames at {@value #BATCH_BYTES} bytes, which bounds that copy but for one large frame.
 */
final class FrameWriter {
    private static final int BATCH = 64;
    private static final long BATCH_BYTES = 256 << 10;
    /** More than this of a leaving QP's memory still to be written, and its link is cut instead of copying. */
    static final long COPY_ON_LEAVE_MAX = 16L << 20;
    /** {@link #owners} entry of buffers that are not a QP's memory (headers, copies). */
    private static final int NOBODY = -1;

    /** Asks the link's loop for a call when the socket has room again (or to stop calling). */
    @FunctionalInterface
    interface Room {
        void want(boolean on);
    }

    private final SocketChannel channel;
    private final Room room;
    private final ArrayDeque<Frame> queue = new ArrayDeque<>(); // guarded by itself
    /** Held while writing; its holders never wait for anything (the socket is non-blocking). */
    private final ReentrantLock writing = new ReentrantLock();
    // The batch being written, guarded by writing.
    private final ByteBuffer[] headers = new ByteBuffer[BATCH];
    private ByteBuffer[] gather = new ByteBuffer[BATCH * 2];
    /** The source QP of each gathered payload buffer ({@link #NOBODY} for headers and copies). */
    private int[] owners = new int[BATCH * 2];
    private int first;
    private int end;
    private long left;
    /** A read answer sent from its file (sendfile) after the gathered bytes, and how much of it went. */
    private Frame fileFrame;
    private long fileSent;
    /** The socket was full: the loop writes when it has room; posting threads only queue. */
    private volatile boolean waitingForRoom;
    private volatile boolean stopped;

    FrameWriter(SocketChannel channel, Room room) {
        this.channel = channel;
        this.room = room;
        ByteBuffer all = ByteBuffer.allocateDirect(BATCH * Frame.HEADER);
        for (int i = 0; i < BATCH; i++) {
            headers[i] = all.slice(i * Frame.HEADER, Frame.HEADER);
        }
    }

    /** Queues a frame (its payload, if any, goes right after its header) and writes what the socket takes now. */
    void add(Frame f) throws IOException {
        queue(f);
        flush();
    }

    /**
     * Queues a frame without writing it: its caller {@link #flush}es once it has queued the frames that
     * go together (a chain of requests, the answers to what one read brought), so they leave in one
     * gathering write instead of one system call each.
     */
    void queue(Frame f) {
        synchronized (queue) {
            if (!stopped) {
                queue.add(f);
            }
        }
    }

    /**
     * Writes what is queued on this thread, unless another thread is writing (it writes this too
     * before it lets go) or the socket is full (the loop writes when it has room).
     */
    void flush() throws IOException {
        while (!waitingForRoom && !stopped) {
            if (!writing.tryLock()) {
                return;
            }
            try {
                writeWhatFits();
            } finally {
                writing.unlock();
            }
            synchronized (queue) { // a frame queued while we held the lock, by a thread that then went away
                if (queue.isEmpty()) {
                    return;
                }
            }
        }
    }

    /** The socket has room again (the loop). */
    void onWritable() throws IOException {
        writing.lock();
        try {
            if (!stopped) {
                writeWhatFits();
            }
        } finally {
            writing.unlock();
        }
        flush();
    }

    private void writeWhatFits() throws IOException {
        try {
            while (true) {
                if (left > 0) {
                    left -= channel.write(gather, first, end - first);
                    while (first < end && !gather[first].hasRemaining()) {
                        gather[first++] = null;
                    }
                    if (left > 0) {
                        needRoom();
                        return;
                    }
                    first = 0;
                    end = 0;
                }
                if (fileFrame != null) {
                    if (!sendFromFile()) {
                        needRoom();
                        return;
                    }
                    fileFrame = null;
                }
                if (!takeBatch()) {
                    if (waitingForRoom) {
                        waitingForRoom = false;
                        room.want(false);
                    }
                    return;
                }
            }
        } catch (IllegalStateException e) {
            // The memory a queued frame points at was freed (a region closed under a pending read).
            throw new IOException("frame memory no longer available: " + e.getMessage(), e);
        }
    }

    private void needRoom() {
        if (!waitingForRoom) {
            waitingForRoom = true;
            room.want(true);
        }
    }

    /** Takes the next frames off the queue into the gather list; false when there were none. */
    private boolean takeBatch() {
        int taken = 0;
        long bytes = 0;
        synchronized (queue) {
            for (Frame f; taken < BATCH && bytes < BATCH_BYTES && (f = queue.poll()) != null; ) {
                ByteBuffer h = headers[taken++].clear();
                f.encode(h);
                put(h, NOBODY);
                bytes += Frame.HEADER;
                if (f.file != null) { // its bytes go after the gathered ones, straight from the page cache
                    fileFrame = f;
                    fileSent = 0;
                    break;
                }
                if (f.payload != null) {
                    for (ByteBuffer p : f.payload) {
                        put(p, f.srcQpn);
                        bytes += p.remaining();
                    }
                }
            }
        }
        left = bytes;
        return taken > 0;
    }

    private void put(ByteBuffer b, int owner) {
        if (end == gather.length) {
            gather = Arrays.copyOf(gather, end * 2);
            owners = Arrays.copyOf(owners, end * 2);
        }
        gather[end] = b;
        owners[end++] = owner;
    }

    /**
     * Sends the file-backed answer's rest as far as the socket takes it ({@code sendfile}); true when
     * all of it went. A file shorter than its region breaks the link (its bytes cannot be made up).
     */
    private boolean sendFromFile() throws IOException {
        Frame f = fileFrame;
        while (fileSent < f.length) {
            long n = f.file.transferTo(f.filePosition + fileSent, f.length - fileSent, channel);
            if (n <= 0) {
                if (f.file.size() < f.filePosition + f.length) {
                    throw new IOException("a registered file is shorter than its region: its answer cannot be sent");
                }
                return false;
            }
            fileSent += n;
        }
        return true;
    }

    /**
     * QP {@code qpn} leaves: its queued frames are dropped, and what of its memory the batch being
     * written still points at is copied, so nothing reads that memory after this returns. False if
     * that is more than {@link #COPY_ON_LEAVE_MAX} or the memory is gone: then the channel is closed
     * (under the lock, so no write is in progress) and the caller closes the link.
     */
    boolean detach(int qpn) {
        synchronized (queue) {
            queue.removeIf(f -> f.srcQpn == qpn);
        }
        writing.lock();
        try {
            long bytes = 0;
            for (int i = first; i < end; i++) {
                if (owners[i] == qpn) {
                    bytes += gather[i].remaining();
                }
            }
            boolean file = fileFrame != null && fileFrame.srcQpn == qpn;
            if (file) {
                bytes += fileFrame.length - fileSent;
            }
            if (bytes > COPY_ON_LEAVE_MAX) {
                closeChannel();
                return false;
            }
            for (int i = first; i < end; i++) {
                if (owners[i] == qpn) {
                    gather[i] = copyOf(gather[i]);
                    owners[i] = NOBODY;
                }
            }
            if (file) { // the rest through the mapping, after what is gathered (it came after it)
                ByteBuffer rest = fileFrame.payload[0].duplicate().position((int) fileSent);
                left += rest.remaining();
                put(copyOf(rest), NOBODY);
                fileFrame = null;
            }
            return true;
        } catch (IllegalStateException | InternalError e) { // the memory was freed already, or its file cut short
            closeChannel();
            return false;
        } finally {
            writing.unlock();
        }
    }

    private static ByteBuffer copyOf(ByteBuffer b) {
        ByteBuffer c = ByteBuffer.allocate(b.remaining());
        c.put(b.duplicate()).flip();
        return c;
    }

    private void closeChannel() {
        try {
            channel.close();
        } catch (IOException ignored) {
            // closing anyway
        }
    }

    /** Frames queued and not yet taken into a batch. */
    int queued() {
        synchronized (queue) {
            return queue.size();
        }
    }

    /** Whether the socket was full when last written (the loop must be asked to call when it has room). */
    boolean waitingForRoom() {
        return waitingForRoom;
    }

    /** Drops what is queued; nothing more is written. */
    void stop() {
        synchronized (queue) {
            stopped = true;
            queue.clear();
        }
    }
}
