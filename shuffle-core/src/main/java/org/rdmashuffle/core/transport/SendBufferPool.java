package org.rdmashuffle.core.transport;

import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;

import org.rdmashuffle.verbs.Access;
import org.rdmashuffle.verbs.MemoryRegion;
import org.rdmashuffle.verbs.ProtectionDomain;

/**
 * Registered slots metadata messages are encoded into before a SEND. A slot is held until its send
 * completes (the device reads it until then). Thread-safe.
 */
public final class SendBufferPool implements AutoCloseable {
    private final MemoryRegion region;
    private final int slotBytes;
    /** Bytes from one slot's start to the next: {@code slotBytes}, or whole pages where every transfer starts on one. */
    private final long stride;
    private final ArrayDeque<Integer> free = new ArrayDeque<>();
    private final int slots;

    public SendBufferPool(ProtectionDomain pd, int slots, int slotBytes, MemoryRegistration registration) {
        this.slots = slots;
        this.slotBytes = slotBytes;
        this.stride = registration.pageAlignedReads() ? MemoryRegistration.roundUpToPage(slotBytes) : slotBytes;
        this.region = pd.allocateAndRegister(slots * stride, registration.access(Access.LOCAL_WRITE));
        for (int i = 0; i < slots; i++) {
            free.add(i);
        }
    }

    /** A free slot, or -1 when all are in flight. */
    public synchronized int acquire() {
        Integer s = free.poll();
        return s == null ? -1 : s;
    }

    public synchronized void release(int slot) {
        if (slot < 0 || slot >= slots || free.contains(slot)) {
            throw new IllegalStateException("send slot " + slot + " released twice or never taken");
        }
        free.add(slot);
    }

    public MemorySegment slot(int slot) {
        return region.segment().asSlice(slot * stride, slotBytes);
    }

    public int lkey() {
        return region.lkey();
    }

    public int slotBytes() {
        return slotBytes;
    }

    /** Slots held by sends in flight. */
    public synchronized int inUse() {
        return slots - free.size();
    }

    @Override
    public void close() {
        region.close();
    }
}
