package org.rdmashuffle.verbs.ibverbs;

import java.lang.foreign.MemorySegment;

import org.rdmashuffle.verbs.VerbsContext;
import org.rdmashuffle.verbs.VerbsDevice;

/** A {@code struct ibv_device *} from the device list. */
final class IbvDevice implements VerbsDevice {
    private final MemorySegment device;
    private final String name;
    private final long guid;

    IbvDevice(MemorySegment device, String name, long guid) {
        this.device = device;
        this.name = name;
        this.guid = guid;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public long guid() {
        return guid;
    }

    @Override
    public VerbsContext open() {
        MemorySegment ctx = Libibverbs.OPEN_DEVICE.pointer(device);
        return new IbvContext(this, ctx);
    }

    @Override
    public String toString() {
        return name;
    }
}
