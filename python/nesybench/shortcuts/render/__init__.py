"""Rendered scenes of the shortcut tasks: Blender's CLE4EVR and driving scenes, the camera.
May import the foundation and the task core (``shortcuts.task``); not the generator or CLI."""
