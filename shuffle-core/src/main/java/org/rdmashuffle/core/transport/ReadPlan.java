package org.rdmashuffle.core.transport;

import java.util.Arrays;

/**
 * The RDMA_READ work requests of one chain: per request the remote (rkey, address) and its scatter
 * list into local registered buffers. Built by the fetcher, posted by {@link DataConnection}.
 */
public final class ReadPlan {
    private int requests;
    private int[] rkey = new int[4];
    private long[] remote = new long[4];
    private int[] firstSge = new int[5];
    private int sges;
    private long[] sgeAddress = new long[4];
    private int[] sgeLength = new int[4];
    private int[] sgeLkey = new int[4];
    private int maxSgesPerRequest;

    /** Empties it for the next chain, keeping its arrays: a fetcher reuses one plan (posting copies it). */
    public ReadPlan clear() {
        requests = 0;
        sges = 0;
        maxSgesPerRequest = 0;
        return this;
    }

    /** Opens the next read request. */
    public ReadPlan read(int rkey, long remoteAddress) {
        if (requests == this.rkey.length) {
            this.rkey = Arrays.copyOf(this.rkey, requests * 2);
            remote = Arrays.copyOf(remote, requests * 2);
            firstSge = Arrays.copyOf(firstSge, requests * 2 + 1);
        }
        this.rkey[requests] = rkey;
        remote[requests] = remoteAddress;
        requests++;
        firstSge[requests] = sges;
        return this;
    }

    /** Adds a scatter entry to the request opened last. */
    public ReadPlan sge(long address, int length, int lkey) {
        if (requests == 0) {
            throw new IllegalStateException("no read request to scatter into");
        }
        if (sges == sgeAddress.length) {
            sgeAddress = Arrays.copyOf(sgeAddress, sges * 2);
            sgeLength = Arrays.copyOf(sgeLength, sges * 2);
            sgeLkey = Arrays.copyOf(sgeLkey, sges * 2);
        }
        sgeAddress[sges] = address;
        sgeLength[sges] = length;
        sgeLkey[sges] = lkey;
        sges++;
        firstSge[requests] = sges;
        maxSgesPerRequest = Math.max(maxSgesPerRequest, sgeCount(requests - 1));
        return this;
    }

    public int requests() {
        return requests;
    }

    public int rkey(int wr) {
        return rkey[wr];
    }

    public long remoteAddress(int wr) {
        return remote[wr];
    }

    public int sgeCount(int wr) {
        return firstSge[wr + 1] - firstSge[wr];
    }

    public long sgeAddress(int wr, int i) {
        return sgeAddress[firstSge[wr] + i];
    }

    public int sgeLength(int wr, int i) {
        return sgeLength[firstSge[wr] + i];
    }

    public int sgeLkey(int wr, int i) {
        return sgeLkey[firstSge[wr] + i];
    }

    /** The most scatter entries any request of this chain has. */
    public int maxSgesPerRequest() {
        return maxSgesPerRequest;
    }

    /** Bytes the whole chain reads. */
    public long bytes() {
        long total = 0;
        for (int i = 0; i < sges; i++) {
            total += Integer.toUnsignedLong(sgeLength[i]);
        }
        return total;
    }
}
