package org.rdmashuffle.core.config;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.function.Function;

import org.rdmashuffle.verbs.ProviderSettings;
import org.rdmashuffle.verbs.VerbsProvider;

/**
 * Every setting of the engine, with its default. Engine adapters read them from their own
 * configuration under a prefix (Spark: {@code spark.shuffle.rdma.}, Hadoop: {@code
 * rdma.shuffle.}) with {@link #fromProperties}; the keys are the {@code KEY_*} constants, and
 * docs/configuration.md lists each one.
 *
 * <p>Sizes accept {@code k}, {@code m}, {@code g} suffixes; durations {@code ms}, {@code s}, {@code min}.
 */
public final class EngineConfig {
    /** Which of {@code ibv_post_send} or the extended {@code ibv_wr_*} builder posts the data path's reads. */
    public enum PostPath {
        /** {@code ibv_wr_start/ibv_wr_rdma_read/ibv_wr_complete}: measured faster (docs/benchmarks.md). */
        BUILDER,
        /** A linked {@code ibv_send_wr} chain through {@code ibv_post_send}. */
        POST_SEND
    }

    /** Whether the engine registers its memory on demand (ODP) rather than pinned; see transport.MemoryRegistration. */
    public enum OnDemandPaging {
        /** On demand where the device has ODP for all the engine registers and pinning is limited below what it may need. */
        AUTO,
        /** On demand always: a device without ODP fails the engine's start. */
        TRUE,
        /** Pinned always. */
        FALSE
    }

    /**
     * Whether every RDMA_READ starts on a page boundary of the remote region and of the local buffer, the
     * block landing as far into its buffer as it starts into its page; see transport.MemoryRegistration.
     */
    public enum PageAlignedReads {
        /**
         * Where needed: this engine registers on demand on a device whose paging is right only from page
         * boundaries, or a serving peer says its regions are such (the connect reply).
         */
        AUTO,
        /** Always (tests; a device with the same fault the start check misses). */
        TRUE,
        /** Never: a device whose paging is right only from page boundaries is not used on demand. */
        FALSE
    }

    /** Whether a serving connection's reducer reads through memory windows bound for its own queue pair; see transport.WindowUse. */
    public enum MemoryWindows {
        /** Windows where the device has type 2 windows and nothing else rules them out; else plain regions, the reason logged. */
        AUTO,
        /** As auto, but a device or setting that rules windows out is logged as a warning. */
        TRUE,
        /** Plain regions: a described rkey is good on every queue pair of the application (the default). */
        FALSE
    }

    public static final String KEY_PROVIDER = "provider";
    public static final String KEY_DEVICE = "device";
    public static final String KEY_PORT = "port";
    public static final String KEY_GID_INDEX = "gidIndex";
    public static final String KEY_BIND_ADDRESS = "bindAddress";
    public static final String KEY_CONTROL_PORT = "controlPort";
    public static final String KEY_QPS_PER_PEER = "qpsPerPeer";
    public static final String KEY_CHAIN_LENGTH = "chainLength";
    public static final String KEY_MAX_BYTES_IN_FLIGHT = "maxBytesInFlight";
    public static final String KEY_MAX_BYTES_IN_FLIGHT_PER_PEER = "maxBytesInFlightPerPeer";
    public static final String KEY_MAX_CHAINS_IN_FLIGHT_PER_PEER = "maxChainsInFlightPerPeer";
    public static final String KEY_RECEIVE_BUFFERS = "srq.buffers";
    public static final String KEY_RECEIVE_BUFFER_SIZE = "srq.bufferSize";
    public static final String KEY_RECEIVE_LOW_WATER = "srq.lowWater";
    public static final String KEY_SEND_BUFFERS = "sendBuffers";
    public static final String KEY_REGISTERED_MEMORY_LIMIT = "registeredMemoryLimit";
    public static final String KEY_REGISTERED_MEMORY_LIMIT_PER_APPLICATION = "registeredMemoryLimitPerApplication";
    public static final String KEY_FETCH_BUFFER_MEMORY = "fetchBufferMemory";
    public static final String KEY_LAYOUT_CACHE_MEMORY = "layoutCacheMemory";
    public static final String KEY_POLLER_THREADS = "pollerThreads";
    public static final String KEY_SERVER_THREADS = "serverThreads";
    public static final String KEY_CONTROL_CLIENT_THREADS = "controlClientThreads";
    public static final String KEY_BUSY_POLL = "busyPoll";
    /** busyPoll's default on a device (a NIC, rxe): a completion within microseconds is taken without a wake-up. */
    public static final Duration DEVICE_BUSY_POLL = Duration.ofNanos(50_000);
    public static final String KEY_HAND_OFF_FETCHES = "handOffFetches";
    public static final String KEY_CONNECT_TIMEOUT = "connectTimeout";
    public static final String KEY_FETCH_TIMEOUT = "fetchTimeout";
    public static final String KEY_IDLE_TIMEOUT = "idleTimeout";
    public static final String KEY_POST_PATH = "postPath";
    /** Registering memory on demand (ODP) instead of pinning it: auto, true or false ({@link OnDemandPaging}). */
    public static final String KEY_ON_DEMAND_PAGING = "onDemandPaging";
    /** Reads that start on page boundaries: auto, true or false ({@link PageAlignedReads}). */
    public static final String KEY_PAGE_ALIGNED_READS = "pageAlignedReads";
    /** Reads through type 2 memory windows bound per serving connection: false, auto or true ({@link MemoryWindows}). */
    public static final String KEY_MEMORY_WINDOWS = "memoryWindows";
    public static final String KEY_MAX_MEMORY_WINDOWS_PER_APPLICATION = "maxMemoryWindowsPerApplication";
    public static final String KEY_MAX_SERVED_CONNECTIONS = "maxServedConnections";
    public static final String KEY_MAX_SERVED_CONNECTIONS_PER_APPLICATION = "maxServedConnectionsPerApplication";
    public static final String KEY_REGISTERED_MEMORY_LIMIT_PER_USER = "registeredMemoryLimitPerUser";
    public static final String KEY_MAX_REGISTERED_REGIONS = "maxRegisteredRegions";
    public static final String KEY_MAX_INDEX_MEMORY = "maxIndexMemory";
    public static final String KEY_MAX_SERVED_CONNECTIONS_PER_USER = "maxServedConnectionsPerUser";
    public static final String KEY_LOOKUP_TIMEOUT = "lookupTimeout";
    /** The software provider's settings, handed to whichever provider is chosen ({@link #providerSettings()}). */
    public static final String KEY_SOFTWARE_BIND_ADDRESS = "software.bindAddress";
    public static final String KEY_SOFTWARE_PORT = "software.port";
    public static final String KEY_SOFTWARE_SENDFILE = "software.sendfile";

    String provider = "auto";
    String device = null;
    int port = 1;
    int gidIndex = -1;
    String bindAddress = "127.0.0.1";
    int controlPort = 0;
    int qpsPerPeer = 1;
    int chainLength = 16;
    long maxBytesInFlight = 64L << 20;
    long maxBytesInFlightPerPeer = 32L << 20;
    int maxChainsInFlightPerPeer = 8;
    int receiveBuffers = 256;
    int receiveBufferSize = 32 << 10;
    int receiveLowWater = 32;
    int sendBuffers = 128;
    long registeredMemoryLimit = 64L << 30;
    /** Unset (-1): a quarter of registeredMemoryLimit. */
    long registeredMemoryLimitPerApplication = -1;
    long fetchBufferMemory = 256L << 20;
    long layoutCacheMemory = 16L << 20;
    int pollerThreads = 1;
    int serverThreads = 2;
    int controlClientThreads = 2;
    /** Unset (null, "auto"): {@link #DEVICE_BUSY_POLL} on a device, none on the software provider. */
    Duration busyPoll = null;
    /** Unset (null, "auto"): on the software provider only. */
    Boolean handOffFetches = null;
    Duration connectTimeout = Duration.ofSeconds(10);
    Duration fetchTimeout = Duration.ofSeconds(120);
    Duration idleTimeout = Duration.ofSeconds(120);
    PostPath postPath = PostPath.BUILDER;
    OnDemandPaging onDemandPaging = OnDemandPaging.AUTO;
    PageAlignedReads pageAlignedReads = PageAlignedReads.AUTO;
    MemoryWindows memoryWindows = MemoryWindows.FALSE;
    int maxMemoryWindowsPerApplication = 16384;
    int maxServedConnections = 1024;
    int maxServedConnectionsPerApplication = 512;
    /** Unset (-1): half of registeredMemoryLimit. */
    long registeredMemoryLimitPerUser = -1;
    int maxRegisteredRegions = 8192;
    long maxIndexMemory = 128L << 20;
    /** Unset (-1): three quarters of maxServedConnections, and at least maxServedConnectionsPerApplication. */
    int maxServedConnectionsPerUser = -1;
    Duration lookupTimeout = Duration.ofSeconds(10);
    /** Unset (null): {@link #bindAddress}, or loopback if that is the wildcard address. */
    String softwareBindAddress = null;
    int softwarePort = 0;
    boolean softwareSendfile = false;

    public static EngineConfig defaults() {
        return new EngineConfig();
    }

    /**
     * Reads every {@code prefix + KEY_*} that {@code lookup} has; the rest keep their defaults.
     * A value that does not parse fails with the key and the value.
     */
    public static EngineConfig fromProperties(String prefix, Function<String, String> lookup) {
        EngineConfig c = new EngineConfig();
        for (String key : keys()) {
            String v = lookup.apply(prefix + key);
            if (v != null) {
                try {
                    c.set(key, v.trim());
                } catch (RuntimeException e) {
                    throw new IllegalArgumentException(prefix + key + "=" + v + ": " + e.getMessage(), e);
                }
            }
        }
        c.validate();
        return c;
    }

    public static java.util.List<String> keys() {
        return java.util.List.of(KEY_PROVIDER, KEY_DEVICE, KEY_PORT, KEY_GID_INDEX, KEY_BIND_ADDRESS, KEY_CONTROL_PORT,
                KEY_QPS_PER_PEER, KEY_CHAIN_LENGTH, KEY_MAX_BYTES_IN_FLIGHT, KEY_MAX_BYTES_IN_FLIGHT_PER_PEER,
                KEY_MAX_CHAINS_IN_FLIGHT_PER_PEER, KEY_RECEIVE_BUFFERS, KEY_RECEIVE_BUFFER_SIZE, KEY_RECEIVE_LOW_WATER,
                KEY_SEND_BUFFERS, KEY_REGISTERED_MEMORY_LIMIT, KEY_REGISTERED_MEMORY_LIMIT_PER_APPLICATION, KEY_FETCH_BUFFER_MEMORY, KEY_LAYOUT_CACHE_MEMORY, KEY_POLLER_THREADS,
                KEY_SERVER_THREADS, KEY_CONTROL_CLIENT_THREADS,
                KEY_BUSY_POLL, KEY_HAND_OFF_FETCHES, KEY_CONNECT_TIMEOUT, KEY_FETCH_TIMEOUT, KEY_IDLE_TIMEOUT, KEY_POST_PATH, KEY_ON_DEMAND_PAGING, KEY_PAGE_ALIGNED_READS, KEY_MEMORY_WINDOWS, KEY_MAX_MEMORY_WINDOWS_PER_APPLICATION,
                KEY_MAX_SERVED_CONNECTIONS,
                KEY_MAX_SERVED_CONNECTIONS_PER_APPLICATION, KEY_REGISTERED_MEMORY_LIMIT_PER_USER, KEY_MAX_REGISTERED_REGIONS,
                KEY_MAX_INDEX_MEMORY, KEY_MAX_SERVED_CONNECTIONS_PER_USER, KEY_LOOKUP_TIMEOUT, KEY_SOFTWARE_BIND_ADDRESS,
                KEY_SOFTWARE_PORT, KEY_SOFTWARE_SENDFILE);
    }

    /** Sets one key (without prefix) from its text form; returns this. */
    public EngineConfig set(String key, String v) {
        switch (key) {
            case KEY_PROVIDER -> provider = v.toLowerCase(Locale.ROOT);
            case KEY_DEVICE -> device = v.isEmpty() ? null : v;
            case KEY_PORT -> port = Integer.parseInt(v);
            case KEY_GID_INDEX -> gidIndex = Integer.parseInt(v);
            case KEY_BIND_ADDRESS -> bindAddress = v;
            case KEY_CONTROL_PORT -> controlPort = Integer.parseInt(v);
            case KEY_QPS_PER_PEER -> qpsPerPeer = Integer.parseInt(v);
            case KEY_CHAIN_LENGTH -> chainLength = Integer.parseInt(v);
            case KEY_MAX_BYTES_IN_FLIGHT -> maxBytesInFlight = parseBytes(v);
            case KEY_MAX_BYTES_IN_FLIGHT_PER_PEER -> maxBytesInFlightPerPeer = parseBytes(v);
            case KEY_MAX_CHAINS_IN_FLIGHT_PER_PEER -> maxChainsInFlightPerPeer = Integer.parseInt(v);
            case KEY_RECEIVE_BUFFERS -> receiveBuffers = Integer.parseInt(v);
            case KEY_RECEIVE_BUFFER_SIZE -> receiveBufferSize = Math.toIntExact(parseBytes(v));
            case KEY_RECEIVE_LOW_WATER -> receiveLowWater = Integer.parseInt(v);
            case KEY_SEND_BUFFERS -> sendBuffers = Integer.parseInt(v);
            case KEY_REGISTERED_MEMORY_LIMIT -> registeredMemoryLimit = parseBytes(v);
            case KEY_REGISTERED_MEMORY_LIMIT_PER_APPLICATION -> registeredMemoryLimitPerApplication = parseBytes(v);
            case KEY_FETCH_BUFFER_MEMORY -> fetchBufferMemory = parseBytes(v);
            case KEY_LAYOUT_CACHE_MEMORY -> layoutCacheMemory = parseBytes(v);
            case KEY_POLLER_THREADS -> pollerThreads = Integer.parseInt(v);
            case KEY_SERVER_THREADS -> serverThreads = Integer.parseInt(v);
            case KEY_CONTROL_CLIENT_THREADS -> controlClientThreads = Integer.parseInt(v);
            case KEY_BUSY_POLL -> busyPoll = v.equalsIgnoreCase("auto") ? null : parseDuration(v);
            case KEY_HAND_OFF_FETCHES -> handOffFetches = v.equalsIgnoreCase("auto") ? null : parseBoolean(v);
            case KEY_CONNECT_TIMEOUT -> connectTimeout = parseDuration(v);
            case KEY_FETCH_TIMEOUT -> fetchTimeout = parseDuration(v);
            case KEY_IDLE_TIMEOUT -> idleTimeout = parseDuration(v);
            case KEY_POST_PATH -> postPath = choice(PostPath.class, key, v.replace('-', '_'));
            case KEY_ON_DEMAND_PAGING -> onDemandPaging = choice(OnDemandPaging.class, key, v);
            case KEY_PAGE_ALIGNED_READS -> pageAlignedReads = choice(PageAlignedReads.class, key, v);
            case KEY_MEMORY_WINDOWS -> memoryWindows = choice(MemoryWindows.class, key, v);
            case KEY_MAX_SERVED_CONNECTIONS -> maxServedConnections = Integer.parseInt(v);
            case KEY_MAX_SERVED_CONNECTIONS_PER_APPLICATION -> maxServedConnectionsPerApplication = Integer.parseInt(v);
            case KEY_REGISTERED_MEMORY_LIMIT_PER_USER -> registeredMemoryLimitPerUser = parseBytes(v);
            case KEY_MAX_REGISTERED_REGIONS -> maxRegisteredRegions = Integer.parseInt(v);
            case KEY_MAX_MEMORY_WINDOWS_PER_APPLICATION -> maxMemoryWindowsPerApplication = Integer.parseInt(v);
            case KEY_MAX_INDEX_MEMORY -> maxIndexMemory = parseBytes(v);
            case KEY_MAX_SERVED_CONNECTIONS_PER_USER -> maxServedConnectionsPerUser = Integer.parseInt(v);
            case KEY_LOOKUP_TIMEOUT -> lookupTimeout = parseDuration(v);
            case KEY_SOFTWARE_BIND_ADDRESS -> softwareBindAddress = v.isEmpty() ? null : v;
            case KEY_SOFTWARE_PORT -> softwarePort = Integer.parseInt(v);
            case KEY_SOFTWARE_SENDFILE -> softwareSendfile = parseBoolean(v);
            default -> throw new IllegalArgumentException("unknown key " + key);
        }
        return this;
    }

    /** The constant of {@code type} that {@code v} names (any case); else an error naming the key and the choices. */
    private static <E extends Enum<E>> E choice(Class<E> type, String key, String v) {
        try {
            return Enum.valueOf(type, v.toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(key + "=" + v + ": expected one of " + java.util.Arrays.stream(type.getEnumConstants())
                    .map(c -> c.name().toLowerCase(Locale.ROOT)).toList());
        }
    }

    /** Refuses settings the engine cannot run with, naming the key. */
    public EngineConfig validate() {
        require(qpsPerPeer >= 1 && qpsPerPeer <= 64, KEY_QPS_PER_PEER, "1..64", qpsPerPeer);
        require(chainLength >= 1 && chainLength <= 1024, KEY_CHAIN_LENGTH, "1..1024", chainLength);
        require(maxBytesInFlight > 0, KEY_MAX_BYTES_IN_FLIGHT, "positive", maxBytesInFlight);
        require(maxBytesInFlightPerPeer > 0, KEY_MAX_BYTES_IN_FLIGHT_PER_PEER, "positive", maxBytesInFlightPerPeer);
        require(maxChainsInFlightPerPeer >= 1 && maxChainsInFlightPerPeer <= 1024, KEY_MAX_CHAINS_IN_FLIGHT_PER_PEER,
                "1..1024", maxChainsInFlightPerPeer);
        require(receiveBuffers >= 2, KEY_RECEIVE_BUFFERS, "at least 2", receiveBuffers);
        require(receiveBufferSize >= 1024, KEY_RECEIVE_BUFFER_SIZE, "at least 1k", receiveBufferSize);
        require(receiveLowWater >= 0 && receiveLowWater < receiveBuffers, KEY_RECEIVE_LOW_WATER,
                "0.." + (receiveBuffers - 1), receiveLowWater);
        require(sendBuffers >= 2, KEY_SEND_BUFFERS, "at least 2", sendBuffers);
        require(registeredMemoryLimit > 0, KEY_REGISTERED_MEMORY_LIMIT, "positive", registeredMemoryLimit);
        require(registeredMemoryLimitPerApplication == -1
                        || (registeredMemoryLimitPerApplication > 0 && registeredMemoryLimitPerApplication <= registeredMemoryLimit),
                KEY_REGISTERED_MEMORY_LIMIT_PER_APPLICATION, "1.." + registeredMemoryLimit + " (" + KEY_REGISTERED_MEMORY_LIMIT + ")",
                registeredMemoryLimitPerApplication);
        require(fetchBufferMemory >= (1 << 20), KEY_FETCH_BUFFER_MEMORY, "at least 1m", fetchBufferMemory);
        require(layoutCacheMemory >= (64 << 10), KEY_LAYOUT_CACHE_MEMORY, "at least 64k", layoutCacheMemory);
        require(pollerThreads >= 1 && pollerThreads <= 64, KEY_POLLER_THREADS, "1..64", pollerThreads);
        require(serverThreads >= 1 && serverThreads <= 64, KEY_SERVER_THREADS, "1..64", serverThreads);
        require(controlClientThreads >= 1 && controlClientThreads <= 64, KEY_CONTROL_CLIENT_THREADS, "1..64",
                controlClientThreads);
        require(busyPoll == null || !busyPoll.isNegative(), KEY_BUSY_POLL, "not negative, or auto", busyPoll);
        require(connectTimeout.toMillis() > 0, KEY_CONNECT_TIMEOUT, "positive", connectTimeout);
        require(fetchTimeout.toMillis() > 0, KEY_FETCH_TIMEOUT, "positive", fetchTimeout);
        require(idleTimeout.toMillis() > 0, KEY_IDLE_TIMEOUT, "positive", idleTimeout);
        require(maxServedConnections >= 1, KEY_MAX_SERVED_CONNECTIONS, "positive", maxServedConnections);
        require(maxServedConnectionsPerApplication >= 1, KEY_MAX_SERVED_CONNECTIONS_PER_APPLICATION, "positive",
                maxServedConnectionsPerApplication);
        require(registeredMemoryLimitPerUser == -1
                        || (registeredMemoryLimitPerUser > 0 && registeredMemoryLimitPerUser <= registeredMemoryLimit),
                KEY_REGISTERED_MEMORY_LIMIT_PER_USER, "1.." + registeredMemoryLimit + " (" + KEY_REGISTERED_MEMORY_LIMIT + ")",
                registeredMemoryLimitPerUser);
        // Well below vm.max_map_count (65530 by default), which the JVM's own stacks, heap and malloc share.
        require(maxRegisteredRegions >= 4 && maxRegisteredRegions <= 32768, KEY_MAX_REGISTERED_REGIONS, "4..32768",
                maxRegisteredRegions);
        require(maxIndexMemory >= (1 << 20), KEY_MAX_INDEX_MEMORY, "at least 1m", maxIndexMemory);
        require(maxMemoryWindowsPerApplication >= 1, KEY_MAX_MEMORY_WINDOWS_PER_APPLICATION, "positive",
                maxMemoryWindowsPerApplication);
        require(maxServedConnectionsPerUser == -1 || maxServedConnectionsPerUser >= 1, KEY_MAX_SERVED_CONNECTIONS_PER_USER,
                "positive", maxServedConnectionsPerUser);
        require(lookupTimeout.toMillis() > 0, KEY_LOOKUP_TIMEOUT, "positive", lookupTimeout);
        require(softwarePort >= 0 && softwarePort <= 65535, KEY_SOFTWARE_PORT, "0..65535", softwarePort);
        return this;
    }

    private static void require(boolean ok, String key, String range, Object value) {
        if (!ok) {
            throw new IllegalArgumentException(key + " must be " + range + ", not " + value);
        }
    }

    /** Every setting by key, as text: for logs and the doctor. */
    public Map<String, String> describe() {
        Map<String, String> m = new LinkedHashMap<>();
        m.put(KEY_PROVIDER, provider);
        m.put(KEY_DEVICE, device == null ? "(first)" : device);
        m.put(KEY_PORT, Integer.toString(port));
        m.put(KEY_GID_INDEX, gidIndex < 0 ? "auto" : Integer.toString(gidIndex));
        m.put(KEY_BIND_ADDRESS, bindAddress);
        m.put(KEY_CONTROL_PORT, Integer.toString(controlPort));
        m.put(KEY_QPS_PER_PEER, Integer.toString(qpsPerPeer));
        m.put(KEY_CHAIN_LENGTH, Integer.toString(chainLength));
        m.put(KEY_MAX_BYTES_IN_FLIGHT, Long.toString(maxBytesInFlight));
        m.put(KEY_MAX_BYTES_IN_FLIGHT_PER_PEER, Long.toString(maxBytesInFlightPerPeer));
        m.put(KEY_MAX_CHAINS_IN_FLIGHT_PER_PEER, Integer.toString(maxChainsInFlightPerPeer));
        m.put(KEY_RECEIVE_BUFFERS, Integer.toString(receiveBuffers));
        m.put(KEY_RECEIVE_BUFFER_SIZE, Integer.toString(receiveBufferSize));
        m.put(KEY_RECEIVE_LOW_WATER, Integer.toString(receiveLowWater));
        m.put(KEY_SEND_BUFFERS, Integer.toString(sendBuffers));
        m.put(KEY_REGISTERED_MEMORY_LIMIT, Long.toString(registeredMemoryLimit));
        m.put(KEY_REGISTERED_MEMORY_LIMIT_PER_APPLICATION, Long.toString(registeredMemoryLimitPerApplication()));
        m.put(KEY_FETCH_BUFFER_MEMORY, Long.toString(fetchBufferMemory));
        m.put(KEY_LAYOUT_CACHE_MEMORY, Long.toString(layoutCacheMemory));
        m.put(KEY_POLLER_THREADS, Integer.toString(pollerThreads));
        m.put(KEY_SERVER_THREADS, Integer.toString(serverThreads));
        m.put(KEY_CONTROL_CLIENT_THREADS, Integer.toString(controlClientThreads));
        m.put(KEY_BUSY_POLL, busyPoll == null ? "auto" : busyPoll.toNanos() / 1000 + "us");
        m.put(KEY_HAND_OFF_FETCHES, handOffFetches == null ? "auto" : handOffFetches.toString());
        m.put(KEY_CONNECT_TIMEOUT, connectTimeout.toMillis() + "ms");
        m.put(KEY_FETCH_TIMEOUT, fetchTimeout.toMillis() + "ms");
        m.put(KEY_IDLE_TIMEOUT, idleTimeout.toMillis() + "ms");
        m.put(KEY_POST_PATH, postPath.name().toLowerCase(Locale.ROOT));
        m.put(KEY_ON_DEMAND_PAGING, onDemandPaging.name().toLowerCase(Locale.ROOT));
        m.put(KEY_PAGE_ALIGNED_READS, pageAlignedReads.name().toLowerCase(Locale.ROOT));
        m.put(KEY_MEMORY_WINDOWS, memoryWindows.name().toLowerCase(Locale.ROOT));
        m.put(KEY_MAX_MEMORY_WINDOWS_PER_APPLICATION, Integer.toString(maxMemoryWindowsPerApplication));
        m.put(KEY_MAX_SERVED_CONNECTIONS, Integer.toString(maxServedConnections));
        m.put(KEY_MAX_SERVED_CONNECTIONS_PER_APPLICATION, Integer.toString(maxServedConnectionsPerApplication));
        m.put(KEY_REGISTERED_MEMORY_LIMIT_PER_USER, Long.toString(registeredMemoryLimitPerUser()));
        m.put(KEY_MAX_REGISTERED_REGIONS, Integer.toString(maxRegisteredRegions));
        m.put(KEY_MAX_INDEX_MEMORY, Long.toString(maxIndexMemory));
        m.put(KEY_MAX_SERVED_CONNECTIONS_PER_USER, Integer.toString(maxServedConnectionsPerUser()));
        m.put(KEY_LOOKUP_TIMEOUT, lookupTimeout.toMillis() + "ms");
        m.putAll(providerSettings().values());
        return m;
    }

    static long parseBytes(String v) {
        String s = v.toLowerCase(Locale.ROOT).replace("b", "");
        long unit = 1;
        if (s.endsWith("k")) {
            unit = 1L << 10;
        } else if (s.endsWith("m")) {
            unit = 1L << 20;
        } else if (s.endsWith("g")) {
            unit = 1L << 30;
        }
        if (unit != 1) {
            s = s.substring(0, s.length() - 1);
        }
        return Math.multiplyExact(Long.parseLong(s.trim()), unit);
    }

    static boolean parseBoolean(String v) {
        return switch (v.toLowerCase(Locale.ROOT)) {
            case "true" -> true;
            case "false" -> false;
            default -> throw new IllegalArgumentException("true, false or auto, not " + v);
        };
    }

    static Duration parseDuration(String v) {
        String s = v.toLowerCase(Locale.ROOT).trim();
        if (s.endsWith("ms")) {
            return Duration.ofMillis(Long.parseLong(s.substring(0, s.length() - 2).trim()));
        }
        if (s.endsWith("us")) {
            return Duration.ofNanos(1000 * Long.parseLong(s.substring(0, s.length() - 2).trim()));
        }
        if (s.endsWith("min")) {
            return Duration.ofMinutes(Long.parseLong(s.substring(0, s.length() - 3).trim()));
        }
        if (s.endsWith("s")) {
            return Duration.ofSeconds(Long.parseLong(s.substring(0, s.length() - 1).trim()));
        }
        return Duration.ofMillis(Long.parseLong(s));
    }

    public String provider() { return provider; }
    public String device() { return device; }
    public int port() { return port; }
    public int gidIndex() { return gidIndex; }
    public String bindAddress() { return bindAddress; }
    public int controlPort() { return controlPort; }
    public int qpsPerPeer() { return qpsPerPeer; }
    public int chainLength() { return chainLength; }
    public long maxBytesInFlight() { return maxBytesInFlight; }
    public long maxBytesInFlightPerPeer() { return maxBytesInFlightPerPeer; }
    public int maxChainsInFlightPerPeer() { return maxChainsInFlightPerPeer; }

    /** The most bytes one chain of reads to a peer carries: its share of the peer's bytes in flight, at least 256 KiB. */
    public long maxChainBytes() {
        return Math.max(256 << 10, maxBytesInFlightPerPeer / maxChainsInFlightPerPeer);
    }
    public int receiveBuffers() { return receiveBuffers; }
    public int receiveBufferSize() { return receiveBufferSize; }
    public int receiveLowWater() { return receiveLowWater; }
    public int sendBuffers() { return sendBuffers; }
    public long registeredMemoryLimit() { return registeredMemoryLimit; }

    /**
     * Most map-output bytes one application may have registered on a node that serves many: bounds
     * what one tenant can pin of the node's {@link #registeredMemoryLimit()}. Unset: a quarter of it.
     */
    public long registeredMemoryLimitPerApplication() {
        return registeredMemoryLimitPerApplication > 0 ? registeredMemoryLimitPerApplication
                : Math.max(1, registeredMemoryLimit / 4);
    }
    public long fetchBufferMemory() { return fetchBufferMemory; }

    /**
     * What the map-output layouts a reducer keeps may take, across every peer: 8 bytes a partition
     * and about 128 an output. A block of an output whose layout is kept is read with no request.
     */
    public long layoutCacheMemory() { return layoutCacheMemory; }
    public int pollerThreads() { return pollerThreads; }
    /** Threads answering fetch requests that need slow work (finding an output on disk, registering its file). */
    public int serverThreads() { return serverThreads; }

    public int controlClientThreads() { return controlClientThreads; }
    /**
     * How long an idle poller polls before it sleeps: as set, else {@link #DEVICE_BUSY_POLL} on a device
     * and none on a provider that {@linkplain VerbsProvider#completesOnItsOwnThreads completes on its own
     * threads} (the software provider): polling there takes the core from the thread that makes the
     * completion (measured: docs/benchmarks.md, issue 18).
     */
    public Duration busyPollOn(VerbsProvider provider) {
        return busyPoll != null ? busyPoll : provider.completesOnItsOwnThreads() ? Duration.ZERO : DEVICE_BUSY_POLL;
    }

    /**
     * Whether a fetch call runs on a thread of the engine's (the caller returns at once) rather than
     * the caller's: as set, else on a provider that completes on its own threads, where a call's posts
     * are socket writes that wake the provider's threads while the caller (a reduce task, its fetch
     * wait counted) is still in the call; on a device a post is a doorbell, cheaper than the hand-off.
     */
    public boolean handOffFetchesOn(VerbsProvider provider) {
        return handOffFetches != null ? handOffFetches : provider.completesOnItsOwnThreads();
    }

    /**
     * What the provider is configured with when the engine chooses it: the software provider's data
     * listener ({@code software.bindAddress}, by default the engine's {@link #bindAddress()} or loopback
     * for a wildcard; {@code software.port}; {@code software.sendfile}).
     */
    public ProviderSettings providerSettings() {
        String bind = softwareBindAddress != null ? softwareBindAddress
                : bindAddress.equals("0.0.0.0") || bindAddress.equals("::") ? "127.0.0.1" : bindAddress;
        return new ProviderSettings(Map.of(KEY_SOFTWARE_BIND_ADDRESS, bind, KEY_SOFTWARE_PORT, Integer.toString(softwarePort),
                KEY_SOFTWARE_SENDFILE, Boolean.toString(softwareSendfile)));
    }

    public Duration connectTimeout() { return connectTimeout; }
    public Duration fetchTimeout() { return fetchTimeout; }

    public Duration idleTimeout() { return idleTimeout; }
    public PostPath postPath() { return postPath; }

    public OnDemandPaging onDemandPaging() { return onDemandPaging; }
    public PageAlignedReads pageAlignedReads() { return pageAlignedReads; }
    public MemoryWindows memoryWindows() { return memoryWindows; }
    public int maxServedConnections() { return maxServedConnections; }
    public int maxServedConnectionsPerApplication() { return maxServedConnectionsPerApplication; }

    /**
     * Most map-output bytes the applications of one user may have registered together on a node that
     * serves many: one user running several applications still gets one user's share. Unset: half of
     * {@link #registeredMemoryLimit()}.
     */
    public long registeredMemoryLimitPerUser() {
        return registeredMemoryLimitPerUser > 0 ? registeredMemoryLimitPerUser : Math.max(1, registeredMemoryLimit / 2);
    }

    /** Regions (each a mapping, and with sendfile a descriptor) a serving node keeps registered at once; a quarter per application, half per user. */
    public int maxRegisteredRegions() { return maxRegisteredRegions; }

    /** With {@link #memoryWindows()} in use: windows one application's reducers may hold on a service at once. */
    public int maxMemoryWindowsPerApplication() { return maxMemoryWindowsPerApplication; }

    /** Heap a serving node spends on the indexes of map outputs found on disk; a quarter per application, half per user. */
    public long maxIndexMemory() { return maxIndexMemory; }

    /** Connections of one user's applications together (data connections, and control connections alike). */
    public int maxServedConnectionsPerUser() {
        return maxServedConnectionsPerUser > 0 ? maxServedConnectionsPerUser
                : Math.max(maxServedConnectionsPerApplication, maxServedConnections * 3 / 4);
    }

    /** How long a server thread waits for a map output's lookup on disk, or another request's registration of it. */
    public Duration lookupTimeout() { return lookupTimeout; }
}
