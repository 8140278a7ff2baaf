package org.rdmashuffle.verbs;

import java.lang.foreign.MemorySegment;

/**
 * Registered memory ({@code struct ibv_mr}). {@link #lkey()} names it in local SGEs, and
 * {@link #rkey()} lets a peer read or write it one-sidedly, within the access it was registered with.
 */
public interface MemoryRegion extends AutoCloseable {

    /** The registered memory. */
    MemorySegment segment();

    default long address() {
        return segment().address();
    }

    default long length() {
        return segment().byteSize();
    }

    int lkey();

    int rkey();

    int access();

    /**
     * The provider's handle of the region, written into a window's bind request
     * ({@code struct ibv_mw_bind_info.mr}): libibverbs' {@code struct ibv_mr *}, the software provider's key.
     * Only a provider's own regions have one.
     */
    default long handle() {
        throw new UnsupportedOperationException(this + " is not a provider's region: no window can be bound to it");
    }

    /**
     * Checks that {@code [offset, offset + length)} lies inside this region; the message names the
     * region and the range, so a wrong descriptor is diagnosed where it is used.
     */
    default void checkRange(long offset, long length) {
        if (offset < 0 || length < 0 || offset > length() - length) {
            throw new IndexOutOfBoundsException("range [" + offset + ", " + offset + " + " + length
                    + ") is outside memory region of " + length() + " bytes (lkey " + lkey() + ")");
        }
    }

    @Override
    void close();
}
