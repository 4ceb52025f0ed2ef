"""Engine connectors over dfkv.Client (Documentation/connectors.md).

One module per engine; `common` holds what they share: the control
settings that never change identity, and the namespace they derive from
the engine's model and layout metadata.
"""
