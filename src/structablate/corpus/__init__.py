"""Corpus builders: raw sources to the flat document / paragraph / section contract.

Every builder goes through :class:`structablate.corpus.flatten.DocumentBuilder`, which records
each paragraph's offsets as it is emitted, and :func:`structablate.corpus.verify.verify_document`,
so no builder carries its own copy of offset logic.
"""
