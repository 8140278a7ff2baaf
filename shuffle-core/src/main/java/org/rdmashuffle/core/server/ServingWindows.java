package org.rdmashuffle.core.server;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.function.LongSupplier;

import org.rdmashuffle.core.transport.DataConnection;
import org.rdmashuffle.core.transport.WorkRequestIds;
import org.rdmashuffle.verbs.MemoryRegion;
import org.rdmashuffle.verbs.MemoryWindow;
import org.rdmashuffle.verbs.MemoryWindowType;
import org.rdmashuffle.verbs.ProtectionDomain;

/**
 * The memory windows one application's reducers read its map outputs through, when the engine reads
 * through windows ({@code transport.WindowUse}): for each serving connection, one type 2 window per
 * output region it was told of, bound (read-only, the whole region) for that connection's queue pair
 * alone. A descriptor carries the window's key, so it is refused on every other queue pair, even of
 * the same application; a window not used within the lease is deallocated (its key refused from then
 * on) while the region keeps serving the others; a window goes before its region is deregistered.
 *
 * <p>A window is bound when an answer first names its region on that connection ({@link Keys#keyFor},
 * under the registry's lock, so the region stays registered) and cached for the connection's later
 * answers. The binds an answer needs are posted as one chain, the last signaled, before its SEND
 * ({@link Keys#commit}): a send queue runs in order, so the reducer reads only once they took effect.
 * Windows are taken back by {@code ibv_dealloc_mw}, which is synchronous: nothing is in flight against
 * a region when it is deregistered (rxe refuses to deregister a region with a window bound to it).
 *
 * <p>Bounds: at most {@value #BIND_SLOTS} binds of the application posted and not completed (what its
 * queue pairs' send queues and its share of a completion queue hold, a flush of all included); an
 * answer needing more waits for them on a server thread ({@link Keys#room}). Windows are counted in
 * {@link ServiceUsage} (the device's {@code max_mw} is shared by every application): at most {@code
 * maxMemoryWindowsPerApplication} of the application at once (16,384 unless set), twice that of its
 * user's applications, eight times that (within {@code max_mw}) of the node; beyond a bound the least
 * recently used window of this application outside its lease goes, and if there is none the block is
 * answered "busy".
 *
 * <p>Owns every window it allocated, on its tenant's PD. Threads: pollers and server threads
 * ({@link Keys}), pollers ({@link #completed}), the timer ({@link #sweep}), whoever closes a region
 * ({@link #regionClosing}) or retires a connection ({@link #forget}, before its queue pair is
 * destroyed: rxe takes some 50 s to destroy a QP a type 2 window is still bound to). One lock, this object's; lock
 * order: the registry's, this, the connection's (posting).
 */
public final class ServingWindows implements AutoCloseable {
    /** Binds one application may have posted and not completed (and reserved for answers under way). */
    public static final int BIND_SLOTS = org.rdmashuffle.core.transport.WindowUse.BIND_SLOTS_PER_TENANT;
    private static final System.Logger LOG = System.getLogger(ServingWindows.class.getName());

    /** One connection's window over one region. */
    private static final class Bound {
        final MemoryWindow window;
        /** Its key: the window's next key, which it has once its bind is posted. */
        final int key;
        long usedAt;
        /** Reserved by an answer, not posted yet. */
        boolean pending;

        Bound(MemoryWindow window, int key, long usedAt) {
            this.window = window;
            this.key = key;
            this.usedAt = usedAt;
            this.pending = true;
        }
    }

    /** One serving connection's windows. */
    private static final class PerConnection {
        /** By region, least recently used first. */
        final LinkedHashMap<MemoryRegion, Bound> bound = new LinkedHashMap<>(16, 0.75f, true);
        /** Reserved by answers, to be posted by the next commit. */
        final List<MemoryRegion> pending = new ArrayList<>();
        /** Binds posted per signaled chain, oldest first: a send queue completes in order. */
        final ArrayDeque<Integer> posted = new ArrayDeque<>();
    }

    private final ProtectionDomain pd;
    private final String app;
    /** Where its windows are counted (with the user they were charged to). */
    private final ServiceUsage usage;
    private final long leaseNanos;
    private final LongSupplier clock;
    private final Map<DataConnection, PerConnection> connections = new HashMap<>();
    private int windows;
    /** Binds posted and not completed, plus those reserved and not posted. */
    private int slotsUsed;
    /** Completed when slots come back; replaced once completed. */
    private CompletableFuture<Void> room = new CompletableFuture<>();
    private long binds;
    private long takenBack;
    private boolean closed;

    /**
     * @param pd the application's protection domain, where its regions and queue pairs are
     * @param app the application, whose windows {@code usage} counts (against its, its user's and the node's bounds)
     * @param leaseNanos how long a window stays after the last answer that named its region
     */
    public ServingWindows(ProtectionDomain pd, String app, ServiceUsage usage, long leaseNanos, LongSupplier clock) {
        this.pd = pd;
        this.app = app;
        this.usage = usage;
        this.leaseNanos = leaseNanos;
        this.clock = clock;
    }

    /** What one answer on one connection uses: the keys it hands out, and the binds it posts before it goes. */
    public final class Keys {
        private final DataConnection connection;
        /** A key was refused for want of a bind slot since the answer began. One answer's thread at a time. */
        private boolean shortOfSlots;

        private Keys(DataConnection connection) {
            this.connection = connection;
        }

        /**
         * The key the connection reads {@code region} through (unsigned), reserving a bind if the
         * connection has no window over it yet; -1 if the application has no bind slot free (wait
         * for {@link #room}). Under the registry's lock (the region stays registered);
         * ServerBusyRefusal if the application holds as many windows as it may, all within the lease.
         */
        public long keyFor(MemoryRegion region) {
            long key = ServingWindows.this.keyFor(connection, region);
            if (key < 0) {
                shortOfSlots = true;
            }
            return key;
        }

        /** An answer begins: no key of it has been refused yet. */
        public void beginAnswer() {
            shortOfSlots = false;
        }

        /** Whether a key of this answer was refused for want of a bind slot. */
        public boolean wasShort() {
            return shortOfSlots;
        }

        /** Posts the binds reserved so far on the connection, before its answer's SEND. */
        public void commit() {
            ServingWindows.this.commit(connection);
        }

        /** Completes when a bind slot is free: at once if one is now. */
        public CompletableFuture<Void> room() {
            synchronized (ServingWindows.this) {
                return slotsUsed < BIND_SLOTS ? CompletableFuture.completedFuture(null) : room;
            }
        }
    }

    /** The keys of serving connection {@code c}. */
    public Keys keysFor(DataConnection c) {
        return new Keys(c);
    }

    private synchronized long keyFor(DataConnection c, MemoryRegion region) {
        if (closed || !c.acceptsPosts()) { // retiring: its windows are being (or were) taken back
            throw new IllegalStateException("the connection or its application is closing");
        }
        long now = clock.getAsLong();
        PerConnection pc = connections.computeIfAbsent(c, k -> new PerConnection());
        Bound b = pc.bound.get(region);
        if (b != null) {
            b.usedAt = now;
            return Integer.toUnsignedLong(b.key);
        }
        if (slotsUsed >= BIND_SLOTS) {
            return -1;
        }
        String full;
        while ((full = usage.tryAdd(ServiceUsage.Kind.WINDOWS, app)) != null) {
            if (!takeBackOneIdle(now)) {
                throw new ServerBusyRefusal(full + " (all of this application's used within the lease)");
            }
        }
        MemoryWindow w;
        try {
            w = pd.allocateWindow(MemoryWindowType.TYPE_2);
        } catch (RuntimeException | Error e) {
            usage.remove(ServiceUsage.Kind.WINDOWS, app);
            throw e;
        }
        windows++;
        b = new Bound(w, MemoryWindow.nextRkey(w.rkey()), now);
        pc.bound.put(region, b);
        pc.pending.add(region);
        slotsUsed++;
        return Integer.toUnsignedLong(b.key);
    }

    private synchronized void commit(DataConnection c) {
        PerConnection pc = connections.get(c);
        if (pc == null || pc.pending.isEmpty()) {
            return;
        }
        // Regions closed since they were reserved took their windows (regionClosing): not posted.
        List<MemoryRegion> toPost = new ArrayList<>(pc.pending.size());
        for (MemoryRegion r : pc.pending) {
            Bound b = pc.bound.get(r);
            if (b != null && b.pending) {
                toPost.add(r);
            }
        }
        int skipped = pc.pending.size() - toPost.size();
        slotsUsed -= skipped;
        pc.pending.clear();
        if (skipped > 0) {
            freed();
        }
        int posted = 0;
        try {
            for (int i = 0; i < toPost.size(); i++) {
                MemoryRegion r = toPost.get(i);
                Bound b = pc.bound.get(r);
                c.postWindowBind(WorkRequestIds.of(WorkRequestIds.WINDOW, 0), b.window, b.key, r, i == toPost.size() - 1);
                b.pending = false;
                posted++;
            }
        } finally {
            if (posted > 0) {
                pc.posted.add(posted);
                binds += posted;
            }
            slotsUsed -= toPost.size() - posted; // not posted (the connection broke): its retire takes the windows
            if (posted < toPost.size()) {
                freed();
            }
        }
    }

    /** A signaled bind chain of {@code c} completed (or failed: its connection goes): its slots come back. */
    public synchronized void completed(DataConnection c) {
        PerConnection pc = connections.get(c);
        Integer n = pc == null ? null : pc.posted.poll();
        if (n != null) {
            slotsUsed -= n;
            freed();
        }
    }

    private void freed() {
        CompletableFuture<Void> r = room;
        room = new CompletableFuture<>();
        r.complete(null);
    }

    /** Deallocates the least recently used window outside its lease, of any connection; false if none. */
    private boolean takeBackOneIdle(long now) {
        for (PerConnection pc : connections.values()) {
            for (Iterator<Map.Entry<MemoryRegion, Bound>> it = pc.bound.entrySet().iterator(); it.hasNext(); ) {
                Bound b = it.next().getValue();
                if (!b.pending && now - b.usedAt >= leaseNanos) {
                    it.remove();
                    close(b);
                    takenBack++;
                    return true;
                }
                break; // least recently used first: the rest are newer
            }
        }
        return false;
    }

    /**
     * Takes back every window whose region no answer named within the lease: its reducer is idle, and
     * its key is refused from now on (it asks again, and gets a new one). For the engine's timer.
     *
     * @return nanoseconds until the next window's lease ends (0: one reserved and not posted yet
     *     outlived it), or {@link Long#MAX_VALUE} with no window left (a window made later is looked
     *     at by the end of its lease: its answer arms the timer)
     */
    public synchronized long sweep() {
        long now = clock.getAsLong();
        long next = Long.MAX_VALUE;
        for (PerConnection pc : connections.values()) {
            for (Iterator<Bound> it = pc.bound.values().iterator(); it.hasNext(); ) {
                Bound b = it.next();
                if (now - b.usedAt < leaseNanos) {
                    next = Math.min(next, leaseNanos - (now - b.usedAt));
                    break; // least recently used first
                }
                if (!b.pending) {
                    it.remove();
                    close(b);
                    takenBack++;
                } else {
                    next = 0;
                }
            }
        }
        return next;
    }

    /** {@code region} is about to be deregistered: every window over it goes first. */
    public synchronized void regionClosing(MemoryRegion region) {
        for (PerConnection pc : connections.values()) {
            Bound b = pc.bound.remove(region);
            if (b != null) {
                close(b);
            }
        }
    }

    /**
     * {@code c} is being retired, its queue pair in ERR (nothing of it runs any more) and not yet
     * destroyed: its windows go, and its binds' slots come back.
     */
    public synchronized void forget(DataConnection c) {
        PerConnection pc = connections.remove(c);
        if (pc == null) {
            return;
        }
        for (Bound b : pc.bound.values()) {
            close(b);
        }
        int n = pc.pending.size();
        for (int posted : pc.posted) {
            n += posted;
        }
        slotsUsed -= n;
        freed();
    }

    private void close(Bound b) {
        windows--;
        usage.remove(ServiceUsage.Kind.WINDOWS, app);
        try {
            b.window.close();
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "rdma-shuffle: cannot deallocate " + b.window + ": " + e.getMessage());
        }
    }

    /** Windows held now. */
    public synchronized int windows() {
        return windows;
    }

    /** Binds posted since the start. */
    public synchronized long binds() {
        return binds;
    }

    /** Windows taken back for being idle past the lease, since the start. */
    public synchronized long takenBack() {
        return takenBack;
    }

    /** Deallocates every window (its connections are retired already); before the regions and the PD go. */
    @Override
    public synchronized void close() {
        closed = true;
        for (PerConnection pc : connections.values()) {
            for (Bound b : pc.bound.values()) {
                close(b);
            }
        }
        connections.clear();
        freed();
    }
}
