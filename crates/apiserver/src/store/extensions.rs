//! What the hooks keep under the store's lock beside the objects, one value per type: each controller
//! finds its own work list by its type, so neither the store nor the other controllers need to know
//! it. Written here because it is a few lines over a map of `Any`; the type maps on crates.io carry
//! `Clone` or `Sync` bounds the controllers' state has no use for.

use std::{
    any::{Any, TypeId},
    collections::HashMap,
};

/// One value of each type, made on first use.
#[derive(Default)]
pub struct Extensions(HashMap<TypeId, Box<dyn Any + Send>>);

impl Extensions {
    /// The value of type `T`, made with its default the first time it is asked for.
    pub fn get<T: Any + Send + Default>(&mut self) -> &mut T {
        self.0
            .entry(TypeId::of::<T>())
            .or_insert_with(|| Box::new(T::default()))
            .downcast_mut()
            .expect("a value is stored under its own type's id")
    }

    /// Sets the value of type `T`.
    pub fn set<T: Any + Send>(&mut self, value: T) {
        self.0.insert(TypeId::of::<T>(), Box::new(value));
    }
}
