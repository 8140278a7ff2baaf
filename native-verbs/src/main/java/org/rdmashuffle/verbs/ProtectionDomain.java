package org.rdmashuffle.verbs;

import java.nio.channels.FileChannel;

/**
 * A protection domain ({@code struct ibv_pd}): the memory regions, queue pairs and shared receive
 * queues made from it may be used together, and only together.
 */
public interface ProtectionDomain extends AutoCloseable {

    VerbsContext context();

    /**
     * Registers native memory the caller owns ({@code ibv_reg_mr}). The segment must outlive the
     * region. With {@link Access#ON_DEMAND} the device must support on-demand paging.
     */
    MemoryRegion register(java.lang.foreign.MemorySegment memory, int access);

    /**
     * {@code ibv_advise_mr(PREFETCH)}: asks the device to fault in bytes {@code [offset, offset + length)}
     * of an on-demand region ({@link Access#ON_DEMAND}) now, so a peer's first read of them need not
     * wait for page faults. Asynchronous: returns once the advice is queued. Returns false where the
     * provider cannot take the advice (no {@code advise_mr}: EOPNOTSUPP), so a caller may stop asking;
     * a region without ON_DEMAND is refused.
     */
    default boolean prefetch(MemoryRegion region, long offset, long length) {
        if ((region.access() & Access.ON_DEMAND) == 0) {
            throw new IllegalArgumentException("prefetch is for on-demand regions; this one is " + Access.describe(region.access()));
        }
        region.checkRange(offset, length);
        return false;
    }

    /** Allocates page-aligned native memory of {@code bytes} and registers it; the region owns it. */
    MemoryRegion allocateAndRegister(long bytes, int access);

    /**
     * Maps {@code length} bytes of a file from {@code offset} and registers the mapping; the region
     * owns the mapping and unmaps it on close. Lengths and offsets are longs: no 2 GiB limit. The
     * mapping is read-only unless {@code access} asks for local or remote writes.
     */
    MemoryRegion registerFile(FileChannel file, long offset, long length, int access);

    /**
     * As {@link #registerFile}, and the region takes {@code file}: a provider that answers remote reads
     * itself keeps it to send them from the file (the software provider: {@code sendfile}, no copy
     * through the mapping) and closes it with the region; one whose NIC reads the memory closes it now.
     * Either way the caller no longer closes it (closed here as well when registering fails).
     */
    default MemoryRegion registerOwnedFile(FileChannel file, long offset, long length, int access) {
        try (file) {
            return registerFile(file, offset, length, access);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException("closing the registered file failed", e);
        }
    }

    /**
     * {@code ibv_alloc_mw}: a window of {@code type}, not yet bound (its rkey serves nothing until a
     * bind). A device without windows of that type refuses with EOPNOTSUPP (see
     * {@link DeviceAttributes#supportsMemoryWindows()}).
     */
    MemoryWindow allocateWindow(MemoryWindowType type);

    SharedReceiveQueue createSharedReceiveQueue(int maxWr, int maxSge, int limit);

    /** Creates a reliable-connected queue pair in the RESET state. */
    QueuePair createQueuePair(QueuePairConfig config);

    @Override
    void close();
}
