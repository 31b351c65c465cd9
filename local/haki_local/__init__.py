"""The local and developer composition: the ``haki`` command line, the local API server (HTTP
requests → API Gateway proxy events → the real Lambda handlers), the OpenAPI generator and the
demo data set.

It is the one place allowed to import all three layers — the core ``haki``, the AWS edge
``haki_aws`` and the handlers under ``functions/`` — and nothing imports it back. It is not
shipped in the Lambda layer.
"""
