// The Hive metastore's Thrift service (Hive 2.3.10, pyspark's own jars) on one address.
//
// HiveMetaStore's own main binds every interface (Hive 2.3 has no bind-host setting for the
// metastore): this builds the same server as its non-secure, set-ugi branch (the handler,
// TUGIBasedProcessor, TUGIContainingTransport, the binary protocol) on the address given.
// Run by scripts/services/metastore.sh in Java's source-file mode:
//   java -cp <conf dir>:<pyspark jars>/*:<postgresql driver>:... LocalMetastore.java HOST PORT
// The settings (database, warehouse, S3) come from hive-site.xml on the class path.
import java.net.InetSocketAddress;
import org.apache.hadoop.hive.conf.HiveConf;
import org.apache.hadoop.hive.metastore.HiveMetaStore;
import org.apache.hadoop.hive.metastore.TUGIBasedProcessor;
import org.apache.hadoop.hive.metastore.api.ThriftHiveMetastore;
import org.apache.hadoop.hive.thrift.TUGIContainingTransport;
import org.apache.thrift.protocol.TBinaryProtocol;
import org.apache.thrift.server.TThreadPoolServer;
import org.apache.thrift.transport.TServerSocket;

public class LocalMetastore {
  public static void main(String[] args) throws Exception {
    String host = args[0];
    int port = Integer.parseInt(args[1]);
    HiveConf conf = new HiveConf(HiveMetaStore.HMSHandler.class);
    ThriftHiveMetastore.Iface handler = HiveMetaStore.newRetryingHMSHandler("lakerank metastore", conf, false);
    TServerSocket socket = new TServerSocket(new InetSocketAddress(host, port));
    TThreadPoolServer.Args server = new TThreadPoolServer.Args(socket)
        .processor(new TUGIBasedProcessor<>(handler))
        .transportFactory(new TUGIContainingTransport.Factory())
        .protocolFactory(new TBinaryProtocol.Factory())
        .minWorkerThreads(4)
        .maxWorkerThreads(200);
    System.err.println("LocalMetastore: serving on " + host + ":" + port);
    new TThreadPoolServer(server).serve();
  }
}
