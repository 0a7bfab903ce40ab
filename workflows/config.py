"""Settings shared by every stage; set them in luigi.cfg under [paranmt] or on the command line."""

import luigi


class paranmt(luigi.Config):  # noqa: N801 - the luigi.cfg section name
    workdir = luigi.Parameter(default="work", description="Directory that holds every stage's output.")
    runner = luigi.Parameter(default="DirectRunner", description="Beam runner: DirectRunner, PortableRunner, FlinkRunner, SparkRunner, DataflowRunner.")
    direct_num_workers = luigi.IntParameter(default=0, description="DirectRunner worker processes (0 = one per core, 1 = in process).")
    beam_args = luigi.Parameter(default="", description="Extra Beam pipeline options passed through verbatim, e.g. '--flink_master=host:8081'.")
