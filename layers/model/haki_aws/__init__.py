"""AWS glue for the Lambda functions: observability (Powertools), the HTTP error contract,
API-key authentication at the edge, the RDS Proxy connection, and the local API Gateway
adapter. Ships in the layer beside the core ``haki`` package, which never imports it.
"""
