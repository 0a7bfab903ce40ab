"""Beam pipelines, one module per stage, built from corpus/ and models/ functions.

A stage starts from ``beam.Create`` of its input files (or units): Create already reshuffles
more than one element, so the files are spread over the workers without a Reshuffle of our own
(each transform costs every pipeline about 10 ms of CPU to build and translate). Beam's
DaskRunner does not (its Create puts up to 128 elements in one partition): the project's
``pipelines.dask_runner`` puts one per partition."""
