package org.rdmashuffle.hadoop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Properties;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.mapred.ShuffleConsumerPlugin;
import org.apache.hadoop.mapred.ShuffleHandler;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.api.AuxiliaryService;
import org.junit.jupiter.api.Test;

/** conf/yarn-site.xml, conf/mapred-site.xml and conf/spark-defaults-yarn.conf name classes and keys that exist, and agree on ports. */
class ConfSnippetsTest {
    private static Configuration load(String name) {
        Path file = Path.of("..", "conf", name);
        assertTrue(Files.isRegularFile(file), file + " exists");
        Configuration c = new Configuration(false);
        c.addResource(new org.apache.hadoop.fs.Path(file.toAbsolutePath().toString()));
        return c;
    }

    @Test
    void yarnSite_runsTheServiceAsMapReducesShuffle() {
        Configuration yarn = load("yarn-site.xml");
        assertEquals(List.of(ShuffleHandler.MAPREDUCE_SHUFFLE_SERVICEID, RdmaSparkShuffleService.NAME),
                List.of(yarn.getTrimmedStrings(YarnConfiguration.NM_AUX_SERVICES)));
        Class<?> service = yarn.getClass(String.format(YarnConfiguration.NM_AUX_SERVICE_FMT,
                ShuffleHandler.MAPREDUCE_SHUFFLE_SERVICEID), null);
        assertEquals(RdmaShuffleService.class, service);
        assertTrue(AuxiliaryService.class.isAssignableFrom(service));
        assertTrue(yarn.get(String.format(YarnConfiguration.NM_AUX_SERVICES_CLASSPATH,
                ShuffleHandler.MAPREDUCE_SHUFFLE_SERVICEID)).endsWith("-yarn.jar"));
    }

    @Test
    void yarnSite_runsSparksServiceAsSparkShuffle_besideSparksJar() {
        Configuration yarn = load("yarn-site.xml");
        Class<?> service = yarn.getClass(String.format(YarnConfiguration.NM_AUX_SERVICE_FMT, RdmaSparkShuffleService.NAME), null);
        assertEquals(RdmaSparkShuffleService.class, service);
        String classpath = yarn.get(String.format(YarnConfiguration.NM_AUX_SERVICES_CLASSPATH, RdmaSparkShuffleService.NAME));
        assertTrue(classpath.contains("-yarn.jar:") && classpath.endsWith("-yarn-shuffle.jar"), classpath);
        assertTrue(yarn.getBoolean("spark.authenticate", false), "Spark's half authenticates executors only if told so");
    }

    @Test
    void sparkDefaultsForYarn_pointReducersAtTheService_withEverythingItNeeds() throws Exception {
        Configuration yarn = load("yarn-site.xml");
        Properties spark = new Properties();
        try (var in = Files.newBufferedReader(Path.of("..", "conf", "spark-defaults-yarn.conf"))) {
            spark.load(in);
        }
        assertEquals("org.rdmashuffle.spark.RdmaShuffleManager", spark.getProperty("spark.shuffle.manager"));
        assertEquals("true", spark.getProperty("spark.shuffle.service.enabled"));
        assertEquals("true", spark.getProperty("spark.authenticate"));
        assertEquals("true", spark.getProperty("spark.shuffle.rdma.service.enabled"));
        assertEquals(RdmaSparkShuffleService.NAME, spark.getProperty("spark.shuffle.service.name"));
        assertEquals(yarn.getInt(HadoopKeys.SPARK_SERVICE_PORT, -1),
                Integer.parseInt(spark.getProperty("spark.shuffle.rdma.service.port")));
    }

    @Test
    void mapredSite_selectsTheConsumer_onTheServicesPort() {
        Configuration yarn = load("yarn-site.xml");
        Configuration mapred = load("mapred-site.xml");
        Class<?> consumer = mapred.getClass(RdmaShuffleConsumerPlugin.CONSUMER_PLUGIN_KEY, null);
        assertEquals(RdmaShuffleConsumerPlugin.class, consumer);
        assertTrue(ShuffleConsumerPlugin.class.isAssignableFrom(consumer));
        assertEquals(HadoopSettings.servicePort(yarn), HadoopSettings.servicePort(mapred));
        assertTrue(mapred.get("mapreduce.application.classpath").contains("-yarn.jar"));
        assertTrue(mapred.getBoolean(HadoopSettings.MAPREDUCE_FALLBACK, false));
    }
}
