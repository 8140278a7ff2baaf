package org.rdmashuffle.verbs;

/**
 * A memory window ({@code struct ibv_mw}): an rkey for a range of a registered region, bound and
 * taken back without registering anything. Made by {@link ProtectionDomain#allocateWindow}; a bind
 * gives it a range, an access and a new rkey (the region's own 24-bit index with a new low byte,
 * {@link #nextRkey}); for a type 2 window, also the queue pair the bind was posted on, the only one
 * on which peers may use it. {@code LOCAL_INV} or a peer's {@code SEND_WITH_INV} takes a type 2
 * window back: its rkey is refused from then on, while the region serves its other windows.
 *
 * <p>A bind's new rkey is the window's {@link #rkey()} once the bind is posted (libibverbs sets it
 * so for {@code ibv_bind_mw}; this API for posted binds too). A bind that completes in error
 * ({@link WorkCompletionStatus#MW_BIND_ERR}) puts its QP in error and leaves the window's key
 * unknown: close the window.
 */
public interface MemoryWindow extends AutoCloseable {

    MemoryWindowType type();

    /** The key peers name the window by; changes with every bind. */
    int rkey();

    /** The provider's handle of the window, written into bind requests ({@code struct ibv_mw *}). */
    long handle();

    /** {@code ibv_inc_rkey}: the same window index with the next low byte, the key a new bind gives. */
    static int nextRkey(int rkey) {
        return (rkey & ~0xff) | ((rkey + 1) & 0xff);
    }

    /** {@code ibv_dealloc_mw}: the window's rkey is refused from now on. */
    @Override
    void close();
}
