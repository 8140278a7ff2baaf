package org.rdmashuffle.hadoop;

import org.apache.hadoop.conf.Configuration;
import org.rdmashuffle.core.config.EngineConfig;

/**
 * The settings of the YARN service ({@code yarn-site.xml}) and of the MapReduce consumer
 * ({@code mapred-site.xml} or the job): the engine's keys under {@code rdma.shuffle.}, and the few
 * that belong to Hadoop alone. docs/yarn.md lists them.
 */
final class HadoopSettings {
    static final String PREFIX = "rdma.shuffle.";
    /** The port of every NodeManager's RDMA shuffle service; reducers reach each node's service there. */
    static final String SERVICE_PORT = PREFIX + "service.port";
    static final int DEFAULT_SERVICE_PORT = 13570;
    /** Where the service listens; reducers reach it at the map host's name. */
    static final String SERVICE_BIND_ADDRESS = PREFIX + "service.bindAddress";
    /** false: the service serves any reducer that names an application (trusted networks only). */
    static final String SERVICE_AUTHENTICATE = PREFIX + "service.authenticate";
    /** true: a reducer that cannot use RDMA (no device, no service on a node) fetches over HTTP instead of failing. */
    static final String MAPREDUCE_FALLBACK = PREFIX + "mapreduce.fallback";
    /** The software provider's data listener (it defaults to the engine's bind address, loopback for a wildcard). */
    static final String SOFTWARE_BIND_ADDRESS = PREFIX + EngineConfig.KEY_SOFTWARE_BIND_ADDRESS;
    /** YARN's name for this node (yarn-site.xml); its default is the host's name. */
    static final String NODE_MANAGER_HOSTNAME = "yarn.nodemanager.hostname";
    /** The environment variable YARN sets in every container: the host its NodeManager registered as. */
    static final String CONTAINER_NODE_HOST = "NM_HOST";

    /** Per application in a service: 64 x 32 KiB receive and 32 x 32 KiB send buffers, 3 MiB registered. */
    static final int SERVICE_RECEIVE_BUFFERS = 64;
    static final int SERVICE_SEND_BUFFERS = 32;

    private HadoopSettings() {
    }

    /** The engine's settings from {@code rdma.shuffle.*}; the control port and address as given. */
    static EngineConfig engineConfig(Configuration conf, String bindAddress, int controlPort) {
        EngineConfig c = EngineConfig.fromProperties(PREFIX, conf::get);
        c.set(EngineConfig.KEY_BIND_ADDRESS, bindAddress);
        c.set(EngineConfig.KEY_CONTROL_PORT, Integer.toString(controlPort));
        return c.validate();
    }

    /**
     * A NodeManager service's engine settings: it listens on {@code service.bindAddress}:{@code port};
     * the software provider's data listener defaults to the host's address when that is the wildcard.
     */
    static EngineConfig serviceEngineConfig(Configuration conf, int port) {
        String bind = conf.get(SERVICE_BIND_ADDRESS, "0.0.0.0");
        if (conf.get(SOFTWARE_BIND_ADDRESS) == null && bind.equals("0.0.0.0")) {
            conf.set(SOFTWARE_BIND_ADDRESS, nodeAddress(conf.get(NODE_MANAGER_HOSTNAME)));
        }
        // A service gives every application receive and send buffers of its own (its own protection
        // domain): smaller pools than an executor's, unless the operator sets them.
        Configuration withDefaults = new Configuration(conf);
        withDefaults.setIfUnset(PREFIX + EngineConfig.KEY_RECEIVE_BUFFERS, Integer.toString(SERVICE_RECEIVE_BUFFERS));
        withDefaults.setIfUnset(PREFIX + EngineConfig.KEY_RECEIVE_LOW_WATER, Integer.toString(SERVICE_RECEIVE_BUFFERS / 4));
        withDefaults.setIfUnset(PREFIX + EngineConfig.KEY_SEND_BUFFERS, Integer.toString(SERVICE_SEND_BUFFERS));
        return engineConfig(withDefaults, bind, port);
    }

    static int servicePort(Configuration conf) {
        return conf.getInt(SERVICE_PORT, DEFAULT_SERVICE_PORT);
    }

    /**
     * The address of this node as YARN knows it: {@code nodeHost} (the NodeManager's
     * {@code yarn.nodemanager.hostname}, or a container's {@code NM_HOST}) when it names one, else
     * the host's own name's address (loopback if it has none). A node with several addresses is
     * reached at the one its NodeManager registered, so that is the one to listen on.
     */
    static String nodeAddress(String nodeHost) {
        try {
            if (nodeHost != null && !nodeHost.isBlank() && !nodeHost.equals("0.0.0.0")) {
                return java.net.InetAddress.getByName(nodeHost.strip()).getHostAddress();
            }
            return java.net.InetAddress.getLocalHost().getHostAddress();
        } catch (java.net.UnknownHostException e) {
            return "127.0.0.1";
        }
    }

    /**
     * A service's engine that could not start, said in the NodeManager's terms: the engine names the
     * address and port, this adds the yarn-site.xml key that chose the port (another auxiliary service
     * on it is the usual cause), so the NodeManager's log says what to change.
     */
    static IllegalStateException serviceCannotStart(String service, String portKey, RuntimeException e) {
        return new IllegalStateException("rdma-shuffle " + service + " cannot start: " + e.getMessage() + " (the port is "
                + portKey + " in yarn-site.xml; reducers must be given the same)", e);
    }
}
