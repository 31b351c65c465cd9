"""Writing memory: the write API's core (SPEC §11), one route family a module (``events``,
``facts``, ``lifecycle``, ``conflicts``, ``forget``) over the request models (``api``), the
write transaction and its locks (``store``) and the listings' cursor (``pagination``). Loading
a memory document as written is the local composition's (``haki_local.writer``)."""
