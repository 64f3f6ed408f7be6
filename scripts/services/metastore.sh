#!/usr/bin/env bash
# The Hive metastore as its own Thrift service, its catalog in PostgreSQL (docs/services.md,
# docs/deployment.md).
#
#   eval "$(scripts/services/postgres.sh start)"     # or PGHOST/PGPORT/PGUSER[/PGPASSWORD] of your own
#   eval "$(scripts/services/s3proxy.sh start)"      # optional: S3 settings the metastore uses too
#   eval "$(scripts/services/metastore.sh start)"    # prints LAKERANK_METASTORE_URI,
#                                                    # LAKERANK_METASTORE_DIR, LAKERANK_METASTORE_PID
#   scripts/services/metastore.sh stop "$LAKERANK_METASTORE_DIR"
#
# start: the database is $LAKERANK_METASTORE_DB (default `metastore`) on the PostgreSQL of
# PGHOST/PGPORT/PGUSER/PGPASSWORD, created when missing (psql). Its schema is created up front,
# before the service takes a client, by DataNucleus' SchemaTool from the metastore's own
# mapping (package.jdo in hive-metastore-2.3.10.jar): left to DataNucleus, tables and
# constraints are created lazily, inside clients' transactions, which deadlocks on PostgreSQL.
# The service then runs with automatic schema creation off. It is Hive 2.3.10 from pyspark's
# jars (HiveMetaStore's handler), on 127.0.0.1 at a free port (scripts/services/
# LocalMetastore.java: Hive 2.3's own main binds every interface), with the PostgreSQL JDBC
# driver and hadoop-aws (scripts/services/jars.sh) on its class path: it creates and deletes
# the table folders of the warehouse, so it reaches S3 with the settings in the environment
# (LAKERANK_S3_ENDPOINT, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY; S3A reads the two
# credentials from the environment itself, they are never written to a file or a command
# line). LAKERANK_WAREHOUSE, when set, is the metastore's default warehouse. Its settings go to
# hive-site.xml in a new temporary folder (mode 0600: it holds PGPASSWORD when there is one),
# its log to metastore.log there. Only the shell-sourceable lines go to stdout.
# stop: stops the service by the pid it recorded (SIGTERM, SIGKILL after 30 s) and deletes
# the folder. The database stays (it is PostgreSQL's).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

SERVICE=metastore.sh
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"


pyspark_jars() {
  local d
  d="$(python3 -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))' 2>/dev/null)" \
    || { say "needs pyspark (pip install pyspark==4.3.0)"; exit 1; }
  [ -f "$d/hive-metastore-2.3.10.jar" ] || { say "no hive-metastore-2.3.10.jar in $d"; exit 1; }
  echo "$d"
}

xml_escape() { python3 -c 'import sys, html; print(html.escape(sys.argv[1]))' "$1"; }

property() { printf '  <property><name>%s</name><value>%s</value></property>\n' "$1" "$(xml_escape "$2")"; }

start() {
  : "${PGHOST:?metastore.sh: PGHOST/PGPORT/PGUSER name the PostgreSQL (scripts/services/postgres.sh start)}"
  local pgport="${PGPORT:-5432}" pguser="${PGUSER:-$USER}" db="${LAKERANK_METASTORE_DB:-metastore}"
  command -v java >/dev/null || { say "needs Java 17 (apt-get install openjdk-17-jre-headless)"; exit 1; }
  # LocalMetastore.java runs in Java's source-file mode: the jdk.compiler module (Debian's
  # openjdk-17-jre-headless has it; other JREs may not).
  java --list-modules 2>/dev/null | grep -q '^jdk.compiler' \
    || { say "needs a Java 17 with the jdk.compiler module (apt-get install openjdk-17-jdk-headless)"; exit 1; }
  local jars lib
  jars="$(pyspark_jars)"
  lib="$("$HERE/jars.sh" | sed -n 's/^LAKERANK_JARS=//p')"
  local cp_extra="$lib/postgresql-42.7.14.jar:$lib/hadoop-aws-3.5.0.jar:$lib/bundle-2.35.4.jar:$lib/analyticsaccelerator-s3-1.3.1.jar"

  if ! psql -h "$PGHOST" -p "$pgport" -U "$pguser" -d postgres -tAc "select 1 from pg_database where datname = '$db'" | grep -q 1; then
    psql -q -h "$PGHOST" -p "$pgport" -U "$pguser" -d postgres -c "create database \"$db\"" >&2
  fi

  local dir
  dir="$(mktemp -d "${TMPDIR:-/tmp}/lakerank-metastore.XXXXXX")"
  mkdir -p "$dir/conf"
  local url="jdbc:postgresql://$PGHOST:$pgport/$db"
  (
    umask 077
    {
      echo '<?xml version="1.0"?>'
      echo '<configuration>'
      property javax.jdo.option.ConnectionURL "$url"
      property javax.jdo.option.ConnectionDriverName org.postgresql.Driver
      property javax.jdo.option.ConnectionUserName "$pguser"
      property javax.jdo.option.ConnectionPassword "${PGPASSWORD:-}"
      property datanucleus.connectionPoolingType HikariCP
      # The schema is made up front (below); nothing is created lazily.
      property datanucleus.schema.autoCreateAll false
      property datanucleus.schema.autoCreateTables false
      property datanucleus.schema.autoCreateColumns false
      property datanucleus.schema.autoCreateConstraints false
      property datanucleus.schema.validateTables false
      property datanucleus.schema.validateColumns false
      property datanucleus.schema.validateConstraints false
      # SchemaTool writes no VERSION row; Hive would refuse the schema without one.
      property hive.metastore.schema.verification false
      # A column comment or a new data schema on a parquet table: Spark stores its own schema
      # in table properties over the Hive columns stored first, which Hive's type check would
      # refuse (the embedded home turns the same check off on its client).
      property hive.metastore.disallow.incompatible.col.type.changes false
      # A shared metastore: no object cache outlives a transaction in this JVM either.
      property datanucleus.cache.level2 false
      [ -n "${LAKERANK_WAREHOUSE:-}" ] && property hive.metastore.warehouse.dir "$LAKERANK_WAREHOUSE"
      if [ -n "${LAKERANK_S3_ENDPOINT:-}" ]; then
        property fs.s3a.endpoint "$LAKERANK_S3_ENDPOINT"
        property fs.s3a.endpoint.region "${AWS_REGION:-us-east-1}"
        property fs.s3a.path.style.access true
        case "$LAKERANK_S3_ENDPOINT" in http://*) property fs.s3a.connection.ssl.enabled false ;; esac
      fi
      echo '</configuration>'
    } >"$dir/conf/hive-site.xml"
    # DataNucleus' SchemaTool reads the same connection from a properties file.
    {
      echo "javax.jdo.option.ConnectionURL=$url"
      echo "javax.jdo.option.ConnectionDriverName=org.postgresql.Driver"
      echo "javax.jdo.option.ConnectionUserName=$pguser"
      echo "javax.jdo.option.ConnectionPassword=${PGPASSWORD:-}"
      echo "javax.jdo.PersistenceManagerFactoryClass=org.datanucleus.api.jdo.JDOPersistenceManagerFactory"
      echo "datanucleus.identifierFactory=datanucleus1"
      echo "datanucleus.rdbms.useLegacyNativeValueStrategy=true"
      echo "datanucleus.schema.autoCreateAll=true"
      echo "datanucleus.schema.validateTables=false"
      echo "datanucleus.plugin.pluginRegistryBundleCheck=LOG"
    } >"$dir/schematool.properties"
  )

  # The schema, once per database: DBS is the metastore's first table.
  if ! psql -h "$PGHOST" -p "$pgport" -U "$pguser" -d "$db" -tAc "select to_regclass('public.\"DBS\"')" | grep -q DBS; then
    say "creating the metastore schema in $db (DataNucleus SchemaTool)"
    (cd "$dir" && unzip -o -q "$jars/hive-metastore-2.3.10.jar" package.jdo \
      && java -cp "$jars/*:$cp_extra" org.datanucleus.store.schema.SchemaTool -create -api JDO \
           -props schematool.properties package.jdo >"$dir/schematool.log" 2>&1) \
      || { tail -30 "$dir/schematool.log" >&2; rm -rf "$dir"; exit 1; }
    grep -q "completed successfully" "$dir/schematool.log" || { tail -30 "$dir/schematool.log" >&2; rm -rf "$dir"; exit 1; }
  fi

  local port pid tries=0
  while :; do
    port="$(free_port)"
    (cd "$dir" && exec java ${LAKERANK_METASTORE_JAVA_OPTS:--Xmx512m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC} \
        -cp "$dir/conf:$jars/*:$cp_extra" "$HERE/LocalMetastore.java" 127.0.0.1 "$port" \
        >"$dir/metastore.log" 2>&1 </dev/null) &
    pid=$!
    echo "$pid" >"$dir/server.pid"
    wait_listening "$pid" "$port" 120 && break
    kill -KILL "$pid" 2>/dev/null || true
    tries=$((tries + 1))
    if [ "$tries" -ge 3 ]; then
      tail -30 "$dir/metastore.log" >&2; rm -rf "$dir"; exit 1
    fi
  done
  echo "LAKERANK_METASTORE_URI=thrift://127.0.0.1:$port"
  echo "LAKERANK_METASTORE_DIR=$dir"
  echo "LAKERANK_METASTORE_PID=$pid"
}

stop() {
  stop_recorded "${1:-}" TERM
}

dispatch "start | stop DIR" "$@"
