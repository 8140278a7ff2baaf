package org.rdmashuffle.verbs.software;

import org.rdmashuffle.verbs.Access;
import org.rdmashuffle.verbs.MemoryWindow;
import org.rdmashuffle.verbs.MemoryWindowType;
import org.rdmashuffle.verbs.WorkCompletionStatus;

/**
 * A memory window of the software provider, with the checks rxe makes (Linux's rxe_mw.c, after the
 * IBA rules it cites): a type 1 window is valid from allocation and rebound at will; a type 2
 * window is free until a bind, which needs it free and posted on a QP of its PD, and which ties it
 * to that QP; only a type 2 window is invalidated, which frees it. A remote access through a window
 * needs its current key, its PD, (type 2) the QP it is bound to, the access asked for, and the range.
 *
 * <p>Owns nothing native. Binds and local invalidations run on the posting thread (under the QP's
 * lock), remote invalidations and lookups on the link's loop: the state is guarded by this object.
 */
final class SoftMemoryWindow implements MemoryWindow {
    private enum State { FREE, VALID, INVALID }

    final SoftProtectionDomain pd;
    private final MemoryWindowType type;
    private final long handle;
    private volatile int rkey;
    private State state;
    private SoftMemoryRegion region;
    private long address;
    private long length;
    private int access;
    private SoftQueuePair boundQp;

    SoftMemoryWindow(SoftProtectionDomain pd, MemoryWindowType type, int rkey, long handle) {
        this.pd = pd;
        this.type = type;
        this.rkey = rkey;
        this.handle = handle;
        this.state = type == MemoryWindowType.TYPE_2 ? State.FREE : State.VALID;
    }

    /**
     * Executes a bind posted on {@code qp}: the window takes the low byte of {@code newRkey}, the range
     * and the access; a type 2 window is tied to {@code qp}. Returns 0, or the status it completes with.
     */
    synchronized int bind(SoftQueuePair qp, int newRkey, SoftMemoryRegion mr, long addr, long len,
                          int windowAccess) {
        // Remote access bits only: zero-based windows are not offered.
        boolean ok = state != State.INVALID
                && (windowAccess & ~(Access.REMOTE_READ | Access.REMOTE_WRITE | Access.REMOTE_ATOMIC)) == 0;
        if (ok && type == MemoryWindowType.TYPE_1) {
            ok = state == State.VALID;
        } else if (ok) {
            ok = state == State.FREE && qp.pd == pd && mr != null && len != 0;
        }
        if (ok && mr != null) {
            ok = mr.pd == pd && !mr.isClosed()
                    && (mr.access() & Access.MW_BIND) != 0
                    && ((windowAccess & (Access.REMOTE_WRITE | Access.REMOTE_ATOMIC)) == 0 || (mr.access() & Access.LOCAL_WRITE) != 0)
                    && addr >= mr.address() && len >= 0 && addr - mr.address() <= mr.length() - len;
        }
        if (!ok) {
            return WorkCompletionStatus.MW_BIND_ERR.code();
        }
        rkey = (rkey & ~0xff) | (newRkey & 0xff);
        state = State.VALID;
        unbindRegion();
        region = len == 0 ? null : mr;
        if (region != null) {
            region.windowsBound.incrementAndGet();
        }
        address = addr;
        length = len;
        access = windowAccess;
        boundQp = type == MemoryWindowType.TYPE_2 ? qp : null;
        return 0;
    }

    /**
     * Takes the window back (LOCAL_INV, or a SEND_WITH_INV arriving on {@code qp} when {@code remote}):
     * type 2 only, valid, and for a remote invalidation bound to the QP it arrived on. False when refused.
     */
    synchronized boolean invalidate(int key, SoftQueuePair qp, boolean remote) {
        if (key != rkey || type != MemoryWindowType.TYPE_2 || state != State.VALID || (remote && boundQp != qp)) {
            return false;
        }
        state = State.FREE;
        unbindRegion();
        boundQp = null;
        address = 0;
        length = 0;
        access = 0;
        return true;
    }

    /** The region a remote access through key {@code key} on {@code qp} reaches, if every check passes; else null. */
    synchronized SoftMemoryRegion regionFor(int key, SoftQueuePair qp, long addr, long len, int needed) {
        SoftMemoryRegion mr = region;
        boolean ok = key == rkey && state == State.VALID && mr != null && !mr.isClosed() && qp.pd == pd
                && (type != MemoryWindowType.TYPE_2 || boundQp == qp)
                && (access & needed) == needed
                && addr >= address && len >= 0 && addr - address <= length - len;
        return ok ? mr : null;
    }

    @Override
    public MemoryWindowType type() {
        return type;
    }

    @Override
    public int rkey() {
        return rkey;
    }

    @Override
    public long handle() {
        return handle;
    }

    @Override
    public void close() {
        synchronized (this) {
            if (state == State.INVALID) {
                return;
            }
            state = State.INVALID;
            unbindRegion();
            boundQp = null;
        }
        pd.context.removeWindow(this);
    }

    /** Under the lock: lets go of the region it was bound to, which may be deregistered once no window is. */
    private void unbindRegion() {
        if (region != null) {
            region.windowsBound.decrementAndGet();
            region = null;
        }
    }

    @Override
    public String toString() {
        return "MemoryWindow[" + type + ", rkey 0x" + Integer.toHexString(rkey) + "]";
    }
}
