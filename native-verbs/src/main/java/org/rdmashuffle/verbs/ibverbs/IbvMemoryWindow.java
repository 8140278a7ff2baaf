package org.rdmashuffle.verbs.ibverbs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.util.concurrent.atomic.AtomicBoolean;

import org.rdmashuffle.verbs.Errno;
import org.rdmashuffle.verbs.MemoryWindow;
import org.rdmashuffle.verbs.MemoryWindowType;
import org.rdmashuffle.verbs.VerbsException;

/**
 * {@code struct ibv_mw *}. verbs.h's {@code ibv_alloc_mw}, {@code ibv_dealloc_mw} and
 * {@code ibv_bind_mw} are {@code static inline}, each a call through {@code ibv_context.ops}
 * ({@link ContextOps}); the struct is small and stable, so it is laid out here by hand. The window's
 * rkey is the struct's: the provider changes it on {@code ibv_bind_mw}, and this API on a posted bind.
 */
final class IbvMemoryWindow implements MemoryWindow {
    /** struct ibv_mw { struct ibv_context *context; struct ibv_pd *pd; uint32_t rkey; uint32_t handle; enum ibv_mw_type type; }. */
    static final StructLayout LAYOUT = MemoryLayout.structLayout(ADDRESS.withName("context"), ADDRESS.withName("pd"),
            JAVA_INT.withName("rkey"), JAVA_INT.withName("handle"), JAVA_INT.withName("type"), MemoryLayout.paddingLayout(4));
    private static final long RKEY = LAYOUT.byteOffset(MemoryLayout.PathElement.groupElement("rkey"));
    private static final long PD = LAYOUT.byteOffset(MemoryLayout.PathElement.groupElement("pd"));

    final IbvProtectionDomain pd;
    final MemorySegment mw;
    private final MemoryWindowType type;
    private final AtomicBoolean closed = new AtomicBoolean();

    private IbvMemoryWindow(IbvProtectionDomain pd, MemorySegment mw, MemoryWindowType type) {
        this.pd = pd;
        this.mw = mw.reinterpret(LAYOUT.byteSize());
        this.type = type;
    }

    static IbvMemoryWindow allocate(IbvProtectionDomain pd, MemoryWindowType type) {
        MemorySegment fn = pd.context.ops.allocMw();
        if (fn == null) {
            throw new VerbsException("ibv_alloc_mw", Errno.EOPNOTSUPP, pd.context.device().name() + " has no memory windows");
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = Libibverbs.allocateCaptureState(arena);
            MemorySegment mw = (MemorySegment) Libibverbs.OPS_ALLOC_MW.invokeExact(fn, state, pd.pd, type.code());
            if (mw.equals(MemorySegment.NULL)) {
                throw new VerbsException("ibv_alloc_mw", Libibverbs.errno(state), type + " window on " + pd.context.device().name());
            }
            return new IbvMemoryWindow(pd, mw, type);
        } catch (VerbsException e) {
            throw e;
        } catch (Throwable t) {
            throw new VerbsException("ibv_alloc_mw", "downcall failed: " + t);
        }
    }

    /** The {@code struct ibv_pd *} the window was made in (verbs.h's ibv_bind_mw compares it with the region's). */
    long pdAddress() {
        return mw.get(JAVA_LONG, PD);
    }

    /**
     * After a bind was posted: writes the key the device gives the window into the struct at
     * {@code handle} (what libibverbs' ibv_bind_mw does for type 1 after its post).
     */
    static void rekey(long handle, int rkey) {
        MemorySegment.ofAddress(handle).reinterpret(LAYOUT.byteSize()).set(JAVA_INT, RKEY, rkey);
    }

    boolean isClosed() {
        return closed.get();
    }

    @Override
    public MemoryWindowType type() {
        return type;
    }

    @Override
    public int rkey() {
        return mw.get(JAVA_INT, RKEY);
    }

    @Override
    public long handle() {
        return mw.address();
    }

    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            int rc;
            try {
                rc = (int) Libibverbs.OPS_DEALLOC_MW.invokeExact(pd.context.ops.deallocMw(), mw);
            } catch (Throwable t) {
                throw new VerbsException("ibv_dealloc_mw", "downcall failed: " + t);
            }
            if (rc != 0) {
                throw new VerbsException("ibv_dealloc_mw", Math.abs(rc), "window rkey 0x" + Integer.toHexString(rkey()));
            }
        }
    }

    @Override
    public String toString() {
        return "MemoryWindow[" + type + ", rkey 0x" + Integer.toHexString(rkey()) + "]";
    }
}
