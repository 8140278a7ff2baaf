package org.rdmashuffle.core.server;

/**
 * What one holder may have of the map-output resources a serving engine keeps: registered bytes (the
 * pages pinned), registered regions (each a file mapping, a region-table entry and, with the software
 * provider's sendfile, an open descriptor) and heap for the outputs' indexes (partition offsets held
 * for outputs found on disk). One of these bounds an application's registry, one each user's
 * applications together, one the whole node ({@link RegistryBudget}).
 *
 * @param bytes registered bytes, counted in whole pages
 * @param regions registered regions
 * @param indexBytes heap held for the indexes of outputs found on disk
 */
public record RegistryLimits(long bytes, int regions, long indexBytes) {
    /** No bound but on bytes: an executor's engine serving its own outputs. */
    public static RegistryLimits ofBytes(long bytes) {
        return new RegistryLimits(bytes, Integer.MAX_VALUE, Long.MAX_VALUE);
    }

    public RegistryLimits {
        if (bytes <= 0 || regions <= 0 || indexBytes <= 0) {
            throw new IllegalArgumentException("limits must be positive: " + bytes + " bytes, " + regions + " regions, "
                    + indexBytes + " index bytes");
        }
    }
}
