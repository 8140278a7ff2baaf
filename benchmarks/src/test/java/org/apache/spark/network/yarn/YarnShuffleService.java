package org.apache.spark.network.yarn;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.yarn.server.api.ApplicationInitializationContext;
import org.apache.hadoop.yarn.server.api.ApplicationTerminationContext;
import org.apache.hadoop.yarn.server.api.AuxiliaryService;
import org.apache.spark.network.TransportContext;
import org.apache.spark.network.crypto.AuthServerBootstrap;
import org.apache.spark.network.sasl.ShuffleSecretManager;
import org.apache.spark.network.server.TransportServer;
import org.apache.spark.network.server.TransportServerBootstrap;
import org.apache.spark.network.shuffle.ExternalBlockHandler;
import org.apache.spark.network.util.ConfigProvider;
import org.apache.spark.network.util.TransportConf;

/**
 * Stands in, on the cluster bed only, for Spark's {@code YarnShuffleService} (Spark's distribution's
 * {@code yarn/spark-<version>-yarn-shuffle.jar}; not on the Maven repository this project builds
 * from). It does what Spark's class does for an application, with Spark's own classes: Spark's
 * {@link ExternalBlockHandler} (executors register their local dirs, reducers fetch over TCP) on
 * Spark's transport at {@code spark.shuffle.service.port}, executors authenticated with the secret
 * YARN hands over at {@code initializeApplication} when {@code spark.authenticate} is on, and the
 * application's state dropped at {@code stopApplication}. Not done: recovery after a NodeManager
 * restart, push-based shuffle, metrics.
 */
public class YarnShuffleService extends AuxiliaryService {
    private ShuffleSecretManager secrets;
    private ExternalBlockHandler blocks;
    private TransportContext context;
    private TransportServer server;

    public YarnShuffleService() {
        super("spark_shuffle");
    }

    @Override
    protected void serviceInit(Configuration conf) throws Exception {
        TransportConf transport = new TransportConf("shuffle", new HadoopConfig(conf));
        blocks = new ExternalBlockHandler(transport, null);
        List<TransportServerBootstrap> bootstraps = new ArrayList<>();
        if (conf.getBoolean("spark.authenticate", false)) {
            secrets = new ShuffleSecretManager();
            bootstraps.add(new AuthServerBootstrap(transport, secrets));
        }
        context = new TransportContext(transport, blocks, true);
        server = context.createServer(conf.getInt("spark.shuffle.service.port", 7337), bootstraps);
        super.serviceInit(conf);
    }

    @Override
    public void initializeApplication(ApplicationInitializationContext c) {
        if (secrets != null) {
            secrets.registerApp(c.getApplicationId().toString(), c.getApplicationDataForService());
        }
    }

    @Override
    public void stopApplication(ApplicationTerminationContext c) {
        String app = c.getApplicationId().toString();
        if (secrets != null) {
            secrets.unregisterApp(app);
        }
        blocks.applicationRemoved(app, false);
    }

    @Override
    public ByteBuffer getMetaData() {
        return ByteBuffer.allocate(0);
    }

    @Override
    protected void serviceStop() throws Exception {
        if (server != null) {
            server.close();
        }
        if (blocks != null) {
            blocks.close();
        }
        if (context != null) {
            context.close();
        }
        super.serviceStop();
    }

    /** Spark's transport settings read from the NodeManager's configuration, as Spark's class reads them. */
    private static final class HadoopConfig extends ConfigProvider {
        private final Configuration conf;

        HadoopConfig(Configuration conf) {
            this.conf = conf;
        }

        @Override
        public String get(String name) {
            String v = conf.get(name);
            if (v == null) {
                throw new java.util.NoSuchElementException(name);
            }
            return v;
        }

        @Override
        public Iterable<Map.Entry<String, String>> getAll() {
            return conf;
        }
    }
}
